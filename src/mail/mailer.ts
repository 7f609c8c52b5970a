import nodemailer, { type Transporter } from 'nodemailer'
import type { Logger } from 'pino'
import type { MailConfig } from '../config/mail.js'
import { type Config, configuredOrigin } from '../config.js'

/** A message as the builders make it; `kind` names it in log lines (never its text). */
export interface Mail {
  to: string[]
  subject: string
  text: string
  kind?: string
}

const loopback = /^(localhost|127(?:\.\d{1,3}){3}|::1)$/i

/**
 * The transport's options. Credentials never cross a network in clear: a plain smtp:// server
 * that is not on this host must offer STARTTLS when a user is given. Timeouts are short because
 * nothing waits on a mail but shutdown.
 */
function transportOptions(smtp: MailConfig['smtp']) {
  return {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    requireTLS: !smtp.secure && smtp.user !== undefined && !loopback.test(smtp.host),
    auth: smtp.user === undefined ? undefined : { user: smtp.user, pass: smtp.pass ?? '' },
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  }
}

/** An error's first line with every address in it blanked: log lines carry no recipient. */
export function mailError(err: unknown): string {
  const message = String((err as Error)?.message ?? err).split('\n')[0] ?? ''
  return message.replace(/<?[^\s<>@:;,"]+@[^\s<>@:;,"]+>?/g, '<address>')
}

/**
 * Sends mail through one SMTP server. A send never fails its caller: mail is a courtesy next
 * to what the dashboard, the API and the events already say, so a refused or unreachable server
 * is logged and counted, not retried. Sends under way are kept so that shutdown (and a test)
 * can wait for them.
 */
export class Mailer {
  /** Messages handed over, messages that were not, and messages a limit kept back. */
  readonly counts = { sent: 0, failed: 0, held: 0 }
  private readonly pending = new Set<Promise<void>>()

  constructor(
    private readonly transport: Transporter,
    private readonly from: string,
    /** Where the links in mails lead: PUBLIC_URL, or https://HOST:PORT. */
    readonly origin: string,
    private readonly log: Logger,
    /** How many invitations may be mailed in 24 hours (INVITATION_MAILS_PER_*). */
    readonly invitationLimits: MailConfig['invitations'] = { perAccount: 20, perAddress: 3 },
  ) {}

  /** A message not sent because a limit was reached: counted and logged, with no recipient. */
  held(kind: string) {
    this.counts.held++
    this.log.info({ kind }, 'mail held: limit reached')
  }

  /** Resolves once the server took the message or refused it; never rejects. */
  send(mail: Mail): Promise<void> {
    return this.sendTo(async () => mail.to, mail)
  }

  /**
   * A message to recipients looked up first (a query, in the same fire-and-forget): a lookup
   * that fails is logged like a send that does.
   */
  sendTo(recipients: () => Promise<string[]>, message: Omit<Mail, 'to'>): Promise<void> {
    const sending = this.deliver(recipients, message).finally(() => this.pending.delete(sending))
    this.pending.add(sending)
    return sending
  }

  /** Until every send under way has ended. */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending])
  }

  async close(): Promise<void> {
    await this.idle()
    this.transport.close()
  }

  private async deliver(recipients: () => Promise<string[]>, m: Omit<Mail, 'to'>) {
    let about = { kind: m.kind ?? 'mail', recipients: 0 }
    try {
      const to = await recipients()
      if (to.length === 0) return
      about = { ...about, recipients: to.length }
      await this.transport.sendMail({
        from: this.from,
        to,
        subject: m.subject,
        text: m.text,
        // RFC 3834: no vacation replies to a machine.
        headers: { 'Auto-Submitted': 'auto-generated' },
      })
      this.counts.sent++
      this.log.info(about, 'mail sent')
    } catch (err) {
      this.counts.failed++
      this.log.warn({ ...about, err: mailError(err) }, 'mail not sent')
    }
  }
}

/** The mailer of SMTP_URL; none when it is unset, and nothing is mailed. */
export function createMailer(config: Config, log: Logger): Mailer | undefined {
  if (config.mail === undefined) return undefined
  if (config.http.publicUrl === undefined) {
    log.warn('SMTP_URL without PUBLIC_URL: links in mails lead to https://HOST:PORT')
  }
  const transport = nodemailer.createTransport(transportOptions(config.mail.smtp))
  const { from, invitations } = config.mail
  return new Mailer(transport, from, configuredOrigin(config.http), log, invitations)
}
