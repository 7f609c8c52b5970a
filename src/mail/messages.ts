import type { TokenView } from '../db/token-document.js'

/** What the hygiene sweep warns of, once per token and threshold (see src/hygiene). */
export interface TokenWarning {
  kind: 'expiring' | 'retiring' | 'idle'
  account: string
  token: TokenView
  /** ISO 8601: when it expires, retires or is deleted for being idle. */
  at: string
  threshold?: '7d' | '1d'
}

/** A message's subject and text; the mailer adds the sender and the recipients. */
export interface Message {
  subject: string
  text: string
  kind: string
}

/** `2026-11-29 12:00 UTC`: one reading of an instant for every reader, wherever they are. */
export const readable = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`

/** Text a person wrote, on one line and of bounded length: for a subject or a quoted name. */
const oneLine = (text: string, max: number) => {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

const footer = '\n-- \nSent by Tessera. This address does not read replies.\n'

/** The invitation link itself is the point of this mail: the only secret any mail carries. */
export function invitationMail(i: {
  account: string
  role: string
  link: string
  expires: string
  inviter?: string
}): Message {
  const who = i.inviter === undefined ? 'You are invited' : `${i.inviter} has invited you`
  const text = [
    `${who} to join the account ${i.account} on Tessera as ${i.role}.`,
    '',
    'To accept, open this link and sign in, or choose a username and password:',
    '',
    i.link,
    '',
    `The link works once and until ${readable(i.expires)}. Anyone who has it can use it:`,
    'do not forward this mail. If you did not expect it, ignore it: nothing happens',
    'unless the link is opened and accepted.',
  ].join('\n')
  return {
    subject: `Invitation to ${i.account} on Tessera`,
    text: text + footer,
    kind: 'invitation',
  }
}

/** What happens to the token, in a sentence, and what the reader can do about it. */
function consequence(w: TokenWarning): { subject: string; lines: string[] } {
  const at = readable(w.at)
  switch (w.kind) {
    case 'expiring':
      return {
        subject: `expires within ${w.threshold === '1d' ? 'a day' : '7 days'}`,
        lines: [
          `expires at ${at}. From then on every request with it is refused (TokenExpired).`,
          'Extend its end where the account policy allows, or create a new token and move',
          'to it (a roll keeps the end), or delete it if it is no longer needed:',
        ],
      }
    case 'retiring':
      return {
        subject: 'stops working soon after its roll',
        lines: [
          `was rolled and stops working at ${at}, when its grace period ends.`,
          'Make sure everything that used it has the new token by then:',
        ],
      }
    case 'idle':
      return {
        subject: 'will be deleted for being unused',
        lines: [
          'has not been used for the idle period the account policy sets, and will be',
          `deleted at ${at} unless it is used before then. Delete it now if it is no`,
          'longer needed:',
        ],
      }
  }
}

/**
 * A warning to the account's owners. The token is named by its id, never by its string: a mail
 * can be read by more than the person it is for. Its note, which anyone who may write tokens
 * chose, is quoted on a line of its own and kept out of the subject: it is not Tessera's word.
 */
export function tokenWarningMail(w: TokenWarning, publicUrl: string): Message {
  const note = oneLine(w.token.note, 80)
  const { subject, lines } = consequence(w)
  const text = [
    `Token ${w.token.id} of the account ${w.account}`,
    ...lines,
    '',
    `${publicUrl}/account/tokens/${encodeURIComponent(w.token.id)}`,
    '',
    ...(note === '' ? [] : [`Its note, as written in the account: "${note}"`, '']),
    `You receive this as an owner of ${w.account}.`,
  ].join('\n')
  return {
    subject: `Tessera: token ${w.token.id} of ${w.account} ${subject}`,
    text: text + footer,
    kind: `token.${w.kind}`,
  }
}
