import { describe, expect, it } from 'vitest'
import { ConfigError, toConfig } from '../../src/config.js'

/** SMTP_URL and MAIL_FROM: what they become, and the one line a bad value stops start-up with. */

const mail = (env: Record<string, string>) => toConfig(env).mail

describe('mail settings', () => {
  it('are off without SMTP_URL', () => {
    expect(mail({})).toBeUndefined()
    expect(mail({ MAIL_FROM: 'ops@example.com' })).toBeUndefined()
  })

  it('read the scheme, host, port and credentials of SMTP_URL', () => {
    expect(mail({ SMTP_URL: 'smtp://mail.example.com' })).toEqual({
      smtp: { host: 'mail.example.com', port: 587, secure: false },
      from: 'Tessera <tessera@localhost>',
      invitations: { perAccount: 20, perAddress: 3 },
    })
    expect(
      mail({ SMTP_URL: 'smtps://mail.example.com/', PUBLIC_URL: 'https://t.example.com:8443/' }),
    ).toEqual({
      smtp: { host: 'mail.example.com', port: 465, secure: true },
      from: 'Tessera <tessera@t.example.com>',
      invitations: { perAccount: 20, perAddress: 3 },
    })
    expect(
      mail({
        SMTP_URL: 'smtp://apikey:s%2Fcr%40t@[::1]:2525',
        MAIL_FROM: ' Tokens <tokens@example.org> ',
      }),
    ).toEqual({
      smtp: { host: '::1', port: 2525, secure: false, user: 'apikey', pass: 's/cr@t' },
      from: 'Tokens <tokens@example.org>',
      invitations: { perAccount: 20, perAddress: 3 },
    })
    expect(mail({ SMTP_URL: 'smtp://127.0.0.1:25', MAIL_FROM: 'tokens@example.org' })?.from).toBe(
      'tokens@example.org',
    )
  })

  it('read the daily limits of invitation mails, 0 mailing none', () => {
    const limits = (env: Record<string, string>) =>
      mail({ SMTP_URL: 'smtp://127.0.0.1:25', ...env })?.invitations
    expect(
      limits({ INVITATION_MAILS_PER_ACCOUNT: '100', INVITATION_MAILS_PER_ADDRESS: '0' }),
    ).toEqual({ perAccount: 100, perAddress: 0 })
    expect(() => mail({ INVITATION_MAILS_PER_ADDRESS: 'many' })).toThrow(
      new ConfigError(
        'INVITATION_MAILS_PER_ADDRESS must be an integer between 0 and 1000000, got "many"',
      ),
    )
  })

  it('stop start-up with one line for a bad value, never echoing SMTP_URL', () => {
    const cases: [Record<string, string>, string][] = [
      [
        { SMTP_URL: 'mail.example.com' },
        'SMTP_URL is not a URL: expected smtp://[user:password@]host[:port] or smtps://...',
      ],
      [
        { SMTP_URL: 'https://u:hunter2@mail.example.com' },
        'SMTP_URL must be smtp://[user:password@]host[:port] or smtps://..., got a https:// URL',
      ],
      [
        { SMTP_URL: 'smtp://' },
        'SMTP_URL has no host: expected smtp://[user:password@]host[:port] or smtps://...',
      ],
      [
        { SMTP_URL: 'smtp://u:hunter2@mail.example.com:99999' },
        'SMTP_URL is not a URL: expected smtp://[user:password@]host[:port] or smtps://...',
      ],
      [{ SMTP_URL: 'smtp://mail.example.com/relay' }, 'SMTP_URL takes no path, query or fragment'],
      [
        { SMTP_URL: 'smtp://mail.example.com?pool=true' },
        'SMTP_URL takes no path, query or fragment',
      ],
      [
        { SMTP_URL: 'smtp://user@mail.example.com' },
        'SMTP_URL must give a user and a password together, or neither',
      ],
      [
        { SMTP_URL: 'smtp://:hunter2@mail.example.com' },
        'SMTP_URL must give a user and a password together, or neither',
      ],
      [
        { SMTP_URL: 'smtp://u:hunter2%zz@mail.example.com' },
        'SMTP_URL: the password has a malformed %-escape',
      ],
      [
        { SMTP_URL: 'smtp://mail.example.com', MAIL_FROM: 'Tessera' },
        'MAIL_FROM must be an address or "Name <address>", got "Tessera"',
      ],
      [
        { SMTP_URL: 'smtp://mail.example.com', MAIL_FROM: 'a@b.c\nBcc: x@y.z' },
        'MAIL_FROM must be an address or "Name <address>", got "a@b.c Bcc: x@y.z"',
      ],
      [
        { MAIL_FROM: 'Tessera <tessera>' },
        'MAIL_FROM must be an address or "Name <address>", got "Tessera <tessera>"',
      ],
    ]
    for (const [env, line] of cases) {
      expect(() => mail(env), JSON.stringify(env)).toThrow(new ConfigError(line))
      expect(() => mail(env)).toThrow(ConfigError)
    }
    for (const [env] of cases) {
      try {
        mail(env)
      } catch (err) {
        expect((err as Error).message).not.toContain('hunter2')
      }
    }
  })
})
