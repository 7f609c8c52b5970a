import { describe, expect, it } from 'vitest'
import { oneEach } from '../../src/dashboard/pages/hygiene-data.js'
import { tokenFields } from '../../src/dashboard/pages/token-form.js'
import { FormRefusal, fieldOf, tokenFormError } from '../../src/dashboard/pages/token-refusals.js'
import type { TokenFormValues } from '../../src/dashboard/views/token-form.js'
import type { TokenRecord } from '../../src/db/token-document.js'
import { ApiError } from '../../src/errors.js'
import type { Notice } from '../../src/hygiene/hygiene.js'
import { ScopeCatalog } from '../../src/scopes/catalog.js'
import { holdChange, holdNew } from '../../src/tokens/policy.js'
import {
  checkScopes,
  normalizeAllowedIps,
  normalizeAllowedUrls,
  normalizeExpiresAt,
} from '../../src/tokens/rules.js'

const now = Date.parse('2026-11-29T10:00:00.000Z')
const day = 86_400_000

const values = (v: Partial<TokenFormValues> = {}): TokenFormValues => ({
  note: 'backend',
  scopes: new Set(['tokens:read']),
  allowedUrls: '',
  allowedIps: '',
  expiresAt: '',
  ...v,
})

/** The refusal `act` throws. */
function refusalOf(act: () => unknown): ApiError {
  try {
    act()
  } catch (err) {
    if (err instanceof ApiError) return err
    throw err
  }
  throw new Error('not refused')
}

const record = (r: Partial<TokenRecord>): TokenRecord => ({
  id: 'c000000000000000000000001',
  username: 'alice',
  usage: 'sk',
  isDefault: false,
  note: 'backend',
  scopes: ['tokens:read'],
  allowedUrls: null,
  scopeless: false,
  keyId: 'k1',
  created: '2026-11-29T10:00:00.000Z',
  modified: '2026-11-29T10:00:00.000Z',
  ...r,
})

/**
 * The token service's own refusals of what a token form sends, each read by the dashboard at its
 * field (pages/token-refusals.ts matches the service's sentences: a change of one fails here).
 */
describe("a token form's refusals, at their fields", () => {
  const catalog = new ScopeCatalog({
    scopes: [
      { id: 'styles:read', description: 'Read styles', public: true },
      { id: 'tokens:read', description: 'Read tokens' },
    ],
    plans: { free: { scopes: ['styles:read', 'tokens:read'] } },
  })
  const principal = { usage: 'sk' as const, username: 'alice', scopes: new Set(['styles:read']) }
  const cases: [string, () => unknown, TokenFormValues, string, string][] = [
    [
      'an sk without an end, under a longest life',
      () => holdNew({ maxSkLifetimeDays: 30 }, record({}), now),
      values(),
      'expires-at',
      'Your account’s token policy requires a secret token to end within 30 days: set Expires at.',
    ],
    [
      'an sk ending too late',
      () => holdNew({ maxSkLifetimeDays: 30 }, record({ expiresAt: now + 40 * day }), now),
      values(),
      'expires-at',
      'Your account’s token policy allows a secret token 30 days at most: set Expires at to 2026-12-29 10:00 UTC or sooner.',
    ],
    [
      "an sk's end removed",
      () =>
        holdChange(
          { maxSkLifetimeDays: 30 },
          { expiresAt: now + day, allowedUrls: null },
          record({}),
          now,
        ),
      values(),
      'expires-at',
      'Your account’s token policy requires a secret token to end within 30 days: Expires at may not be removed.',
    ],
    [
      'a pk without allowed URLs',
      () => holdNew({ pkAllowedUrls: true }, record({ usage: 'pk' }), now),
      values(),
      'allowed-urls',
      'Your account’s token policy requires a public token to have allowed URLs: add at least one.',
    ],
    [
      'a line that is no URL',
      () => normalizeAllowedUrls(['example.com', 'not a url']),
      values({ allowedUrls: 'example.com\n not a url \n' }),
      'allowed-urls',
      '“not a url” is not a URL or host name.',
    ],
    [
      '101 allowed URLs',
      () => normalizeAllowedUrls(Array.from({ length: 101 }, (_, i) => `a${i}.example`)),
      values(),
      'allowed-urls',
      'Give at most 100 allowed URLs.',
    ],
    [
      'a line that is no address',
      () => normalizeAllowedIps(['10.0.0.0/8', '300.1.1.1']),
      values({ allowedIps: '10.0.0.0/8\n300.1.1.1' }),
      'allowed-ips',
      '“300.1.1.1” is not an IP address or CIDR block.',
    ],
    [
      'an end in the past',
      () => normalizeExpiresAt('2026-11-28T10:00:00Z', now),
      values(),
      'expires-at',
      'Expires at must be in the future.',
    ],
    [
      'an end in 11 years',
      () => normalizeExpiresAt('2037-11-29T10:00:00Z', now),
      values(),
      'expires-at',
      'Expires at may be at most 10 years ahead.',
    ],
    [
      'an end that is no time',
      () => normalizeExpiresAt('soon', now),
      values(),
      'expires-at',
      'Expires at must be a date and time (UTC).',
    ],
    [
      'a scope the account has not',
      () => checkScopes(['fonts:read'], catalog.availableTo('free', []), principal, catalog),
      values(),
      'scopes',
      'fonts:read is not available to this account.',
    ],
  ]

  for (const [what, act, typed, id, text] of cases) {
    it(what, () => {
      const err = refusalOf(act)
      expect(fieldOf(err, typed)).toEqual({ id, text })
      expect(tokenFormError(err, 'create', typed)).toEqual({
        message: 'The token was not created.',
        fields: [{ id, text }],
        api: err.message,
        status: 422,
      })
    })
  }

  it('a new token without a note or a scope: the dashboard’s rule, no API message', () => {
    const err = refusalOf(() => tokenFields(values({ note: ' ', scopes: new Set() }), 'create'))
    expect(err).toBeInstanceOf(FormRefusal)
    expect(tokenFormError(err, 'create', values())).toEqual({
      message: 'The token was not created.',
      fields: [
        {
          id: 'note',
          text: 'Enter a note: what the token is for, so that you recognise it later.',
        },
        { id: 'scopes', text: 'Choose at least one scope.' },
      ],
      status: 422,
    })
    // A change may leave them empty, as the API allows.
    expect(tokenFields(values({ note: '', scopes: new Set() }), 'update').note).toBe('')
  })

  it('a note too long, at the note, with the API message', () => {
    const err = refusalOf(() => tokenFields(values({ note: 'x'.repeat(1025) }), 'update'))
    expect(tokenFormError(err, 'update', values())).toEqual({
      message: 'Your changes were not saved.',
      fields: [{ id: 'note', text: 'The note may be at most 1024 characters.' }],
      api: 'resources are invalid',
      status: 422,
    })
  })

  it('passes on what is not a refusal of the form', () => {
    const gone = new ApiError('notFound')
    expect(() => tokenFormError(gone, 'update', values())).toThrow(gone)
  })
})

describe('"Needs attention": one notice a token', () => {
  const token = (id: string) => ({
    id,
    usage: 'sk' as const,
    client: 'api' as const,
    default: false,
    scopes: [],
    note: 'deploy',
    created: '2026-11-29T10:00:00.000Z',
    modified: '2026-11-29T10:00:00.000Z',
  })
  const at = (ms: number) => new Date(ms).toISOString()
  const old = token('cold')
  const successor = token('cnew')

  it("tells a rolled token's old string by its end, not its end of life", () => {
    const notices: Notice[] = [
      { kind: 'retiring', token: old, at: at(now + 3_600_000) },
      { kind: 'expiring', token: old, at: at(now + 3 * day) },
      { kind: 'expiring', token: successor, at: at(now + 3 * day) },
    ]
    expect(oneEach(notices)).toEqual([notices[0], notices[2]])
  })

  it('an old string that expires before its grace ends stops then', () => {
    const notices: Notice[] = [
      { kind: 'expiring', token: old, at: at(now + 1_800_000) },
      { kind: 'retiring', token: old, at: at(now + 3_600_000) },
    ]
    expect(oneEach(notices)).toEqual([{ kind: 'retiring', token: old, at: at(now + 1_800_000) }])
  })

  it('a token that expires and is idle: its soonest', () => {
    const notices: Notice[] = [
      { kind: 'expiring', token: successor, at: at(now + 3 * day) },
      { kind: 'idle', token: successor, at: at(now + 5 * day) },
    ]
    expect(oneEach(notices)).toEqual([notices[0]])
  })
})
