import { describe, expect, it } from 'vitest'
import { type TokenWarning, tokenWarningMail } from '../../src/mail/messages.js'

/** The warnings' words for each kind: what happens when, the token by note and id, the link. */

const token = {
  id: 'cktok0000000000000000000',
  usage: 'sk' as const,
  client: 'api' as const,
  default: false,
  scopes: ['styles:read'],
  note: '',
  created: '2026-01-01T00:00:00.000Z',
  modified: '2026-01-01T00:00:00.000Z',
}
const footer = '\n-- \nSent by Tessera. This address does not read replies.\n'
const base = 'https://tokens.example.com'

describe('token warning mails', () => {
  it('say when a rolled token stops working', () => {
    const w: TokenWarning = {
      kind: 'retiring',
      account: 'acme',
      token,
      at: '2026-11-22T13:00:00.000Z',
    }
    expect(tokenWarningMail(w, base)).toEqual({
      kind: 'token.retiring',
      subject: 'Tessera: token cktok0000000000000000000 of acme stops working soon after its roll',
      text: `${[
        'Token cktok0000000000000000000 of the account acme',
        'was rolled and stops working at 2026-11-22 13:00 UTC, when its grace period ends.',
        'Make sure everything that used it has the new token by then:',
        '',
        'https://tokens.example.com/account/tokens/cktok0000000000000000000',
        '',
        'You receive this as an owner of acme.',
      ].join('\n')}${footer}`,
    })
  })

  it('say when an idle token is deleted, its note on a line of its own, not in the subject', () => {
    const note = 'old\nBcc: everyone@example.com   deploy key of the build farm, long gone now'
    const w: TokenWarning = {
      kind: 'idle',
      account: 'acme',
      token: { ...token, note },
      at: '2026-12-01T00:00:00.000Z',
    }
    const mail = tokenWarningMail(w, base)
    expect(mail.subject).toBe(
      'Tessera: token cktok0000000000000000000 of acme will be deleted for being unused',
    )
    expect(mail.text).toBe(
      `${[
        'Token cktok0000000000000000000 of the account acme',
        'has not been used for the idle period the account policy sets, and will be',
        'deleted at 2026-12-01 00:00 UTC unless it is used before then. Delete it now if it is no',
        'longer needed:',
        '',
        'https://tokens.example.com/account/tokens/cktok0000000000000000000',
        '',
        'Its note, as written in the account: "old Bcc: everyone@example.com deploy key of the build farm, long gone now"',
        '',
        'You receive this as an owner of acme.',
      ].join('\n')}${footer}`,
    )
  })
})
