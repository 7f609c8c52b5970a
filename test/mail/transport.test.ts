import { networkInterfaces } from 'node:os'
import { afterEach, describe, expect, it } from 'vitest'
import { toConfig } from '../../src/config.js'
import { createMailer, type Mailer } from '../../src/mail/mailer.js'
import { capturedLog, logged, startSmtp } from './smtp.js'

/**
 * The SMTP transport against a real server: credentials from SMTP_URL, and every way a send
 * can fail (a wrong password, a refused recipient, no server) logged and counted, never thrown,
 * with no address in the log.
 */

const message = { to: ['ops@example.com'], subject: 'Hello', text: 'A line.\n', kind: 'test' }

describe('the SMTP transport', () => {
  const closing: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const close of closing.splice(0)) await close()
  })

  const mailerFor = (smtpUrl: string, env: Record<string, string> = {}) => {
    const { log, lines } = capturedLog()
    const mailer = createMailer(toConfig({ SMTP_URL: smtpUrl, ...env }), log) as Mailer
    closing.push(() => mailer.close())
    return { mailer, lines }
  }
  const server = async (options: Parameters<typeof startSmtp>[0] = {}) => {
    const smtp = await startSmtp(options)
    closing.push(smtp.close)
    return smtp
  }

  it('is off when SMTP_URL is unset', () => {
    expect(createMailer(toConfig({}), capturedLog().log)).toBeUndefined()
  })

  it('signs in with the user and password of SMTP_URL, %-escapes decoded', async () => {
    const smtp = await server({ users: { 'mail@tessera': 'p@ss:word' } })
    const { mailer, lines } = mailerFor(
      `smtp://mail%40tessera:p%40ss%3Aword@127.0.0.1:${smtp.port}`,
      {
        PUBLIC_URL: 'https://tokens.example.com:8443',
      },
    )
    await mailer.send(message)
    expect(smtp.received.map((m) => [m.user, m.mailFrom, m.rcptTo])).toEqual([
      ['mail@tessera', 'tessera@tokens.example.com', ['ops@example.com']],
    ])
    expect(smtp.received[0]?.headers.get('from')).toBe('Tessera <tessera@tokens.example.com>')
    expect(smtp.received[0]?.text).toBe('A line.\n')
    expect(mailer.counts).toEqual({ sent: 1, failed: 0, held: 0 })
    expect(logged(lines)).toEqual([{ level: 30, kind: 'test', recipients: 1, msg: 'mail sent' }])
  })

  it('logs a wrong password and counts it, and the send still resolves', async () => {
    const smtp = await server({ users: { tessera: 'right' } })
    const { mailer, lines } = mailerFor(`smtp://tessera:wrong@127.0.0.1:${smtp.port}`, {
      MAIL_FROM: 'Tokens <no-reply@example.org>',
      PUBLIC_URL: 'https://tessera.test',
    })
    await expect(mailer.send(message)).resolves.toBeUndefined()
    expect(smtp.received).toEqual([])
    expect(mailer.counts).toEqual({ sent: 0, failed: 1, held: 0 })
    expect(logged(lines)).toEqual([
      {
        level: 40,
        kind: 'test',
        recipients: 1,
        err: 'Invalid login: 535 Invalid username or password',
        msg: 'mail not sent',
      },
    ])
    expect(JSON.stringify(lines)).not.toContain('wrong')
  })

  it('logs a refused recipient without its address', async () => {
    const smtp = await server({ refuse: (address) => address === 'ops@example.com' })
    const { mailer, lines } = mailerFor(`smtp://127.0.0.1:${smtp.port}`, {
      PUBLIC_URL: 'https://tessera.test',
    })
    await mailer.send(message)
    expect(mailer.counts).toEqual({ sent: 0, failed: 1, held: 0 })
    expect(logged(lines)).toEqual([
      {
        level: 40,
        kind: 'test',
        recipients: 1,
        err: "Can't send mail - all recipients were rejected: 550 <address>: no such mailbox",
        msg: 'mail not sent',
      },
    ])
  })

  it('logs a server that is not there, once, and does not retry', async () => {
    const smtp = await server()
    await smtp.close()
    const { mailer, lines } = mailerFor(`smtp://127.0.0.1:${smtp.port}`, {
      PUBLIC_URL: 'https://tessera.test',
    })
    await mailer.send(message)
    await mailer.idle()
    expect(mailer.counts).toEqual({ sent: 0, failed: 1, held: 0 })
    expect(logged(lines)).toEqual([
      {
        level: 40,
        kind: 'test',
        recipients: 1,
        err: `connect ECONNREFUSED 127.0.0.1:${smtp.port}`,
        msg: 'mail not sent',
      },
    ])
  })

  it('warns at start that links lead to HOST:PORT without PUBLIC_URL', async () => {
    const { mailer, lines } = mailerFor('smtp://127.0.0.1:2525', { HOST: '10.1.2.3', PORT: '9443' })
    expect(mailer.origin).toBe('https://10.1.2.3:9443')
    expect(logged(lines)).toEqual([
      { level: 40, msg: 'SMTP_URL without PUBLIC_URL: links in mails lead to https://HOST:PORT' },
    ])
  })

  // A password never crosses a network in clear: off this host, a server without STARTTLS is
  // refused before AUTH. Needs an address of this machine that is not loopback.
  const external = Object.values(networkInterfaces())
    .flat()
    .find((a) => a?.family === 'IPv4' && !a.internal)?.address
  it.skipIf(external === undefined)(
    'refuses to send credentials in clear off this host',
    async () => {
      const smtp = await server({ users: { tessera: 'secret' }, host: '0.0.0.0' })
      const { mailer, lines } = mailerFor(`smtp://tessera:secret@${external}:${smtp.port}`, {
        PUBLIC_URL: 'https://tessera.test',
      })
      await mailer.send(message)
      expect(smtp.received).toEqual([])
      expect(lines[0]?.err).toBe(
        'Error upgrading connection with STARTTLS: 500 Error: command not recognized',
      )
    },
  )
})
