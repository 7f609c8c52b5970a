import type { Db } from '../db/database.js'
import { ownerEmails } from '../db/mail.js'
import type { Mailer } from './mailer.js'
import { type TokenWarning, tokenWarningMail } from './messages.js'

/**
 * Mails a token warning to the account's owners who have an address; fire-and-forget for the
 * sweep that recorded it (awaitable, never rejects). An account without one is simply not mailed:
 * the event and the dashboard's notice still say it.
 */
export function mailWarning(mailer: Mailer, db: Db, w: TokenWarning): Promise<void> {
  return mailer.sendTo(() => ownerEmails(db, w.account), tokenWarningMail(w, mailer.origin))
}
