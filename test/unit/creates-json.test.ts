import { describe, expect, it } from 'vitest'
import { type AuditEvent, auditEvent } from '../../src/audit/events.js'
import { auditRow, outboxRow } from '../../src/db/audit.js'
import { rowsJson } from '../../src/db/creates.js'
import { type TokenRecord, tokenRow } from '../../src/db/repositories.js'
import { tokenDocument, tokenView } from '../../src/db/token-document.js'

/**
 * A create's rows (rowsJson) and its token's document (tokenDocument) are JSON texts written by
 * hand, which must be the very texts `JSON.stringify` makes of them: checked here on events and
 * tokens of random strings, with every character JSON.stringify treats apart.
 */

/** mulberry32: the same draws on every run. */
function random(seed: number) {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const pieces = [
  'a',
  'Z',
  '0',
  '-',
  ' ',
  '"',
  '\\',
  '\\u',
  '/',
  '\u0000',
  '\u0001',
  '\n',
  '\t',
  '\u001f',
  '\u007f',
  '\u00e9',
  '\u2028',
  '\u{1f600}',
  '\ud800',
  '\udfff',
]

function draw(next: () => number) {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T
  const text = (plain: boolean) => {
    let s = ''
    const length = Math.floor(next() * 70)
    // Mostly plain characters, as real values are; now and then any piece.
    for (let i = 0; i < length; i++)
      s += plain || next() < 0.8 ? pick(pieces.slice(0, 4)) : pick(pieces)
    return s
  }
  const maybe = () => (next() < 0.5 ? text(next() < 0.5) : undefined)
  const actor = {
    type: pick(['cli', 'token', 'session', 'admin'] as const),
    id: maybe(),
    usage: next() < 0.5 ? pick(['pk', 'sk', 'tk'] as const) : undefined,
    login: maybe(),
    method: next() < 0.3 ? pick(['password', 'sso'] as const) : undefined,
    address: maybe(),
    requestId: maybe(),
  }
  const event = auditEvent(
    Math.floor(next() * 2e12),
    'token.created',
    Object.fromEntries(Object.entries(actor).filter(([, v]) => v !== undefined)) as never,
    next() < 0.8 ? { type: 'token', id: text(next() < 0.7) } : { type: 'token' },
    maybe(),
    next() < 0.7
      ? { usage: pick(['pk', 'sk']), scopes: [text(true)], note: text(false) }
      : undefined,
  )
  const token: TokenRecord = {
    id: text(true),
    username: text(next() < 0.7),
    usage: pick(['pk', 'sk'] as const),
    note: text(false),
    scopes: Array.from({ length: Math.floor(next() * 3) }, () => text(next() < 0.8)),
    allowedUrls:
      next() < 0.5 ? null : Array.from({ length: Math.floor(next() * 3) }, () => text(false)),
    ...(next() < 0.3 ? {} : { allowedIps: next() < 0.3 ? null : [text(true), text(false)] }),
    ...(next() < 0.5 ? {} : { expiresAt: next() < 0.3 ? null : Math.floor(next() * 2e12) }),
    isDefault: next() < 0.5,
    scopeless: next() < 0.5,
    keyId: text(next() < 0.7),
    created: new Date(Math.floor(next() * 2e12)).toISOString(),
    modified: text(next() < 0.9),
  }
  return { event, token }
}

const stringified = (tokens: TokenRecord[], events: AuditEvent[]) => [
  JSON.stringify(tokens.map((t) => tokenRow(t, undefined))),
  JSON.stringify(events.map((e) => auditRow(e, e.details ?? null))),
  JSON.stringify(events.map((e) => outboxRow(e, e))),
]

describe('the rows and documents of creates as JSON text', () => {
  it('are what JSON.stringify writes, for any strings (2,000 groups of 0 to 4 rows)', () => {
    const next = random(20261125)
    let escaped = 0
    for (let i = 0; i < 2000; i++) {
      const drawn = Array.from({ length: Math.floor(next() * 5) }, () => draw(next))
      const tokens = drawn.map((d) => d.token)
      const events = drawn.map((d) => d.event)
      const rows = rowsJson(tokens, events)
      const texts = [rows.tokens, rows.audit, rows.outbox]
      expect(texts).toEqual(stringified(tokens, events))
      // Told without reading the texts again: a `\u` in the events' rows.
      expect(rows.escapes).toBe(rows.audit.includes('\\u') || rows.outbox.includes('\\u'))
      for (const t of tokens) expect(tokenDocument(t)).toBe(JSON.stringify(tokenView(t)))
      if (rows.escapes) escaped++
    }
    // The draws reach the characters written as escapes, and not only those.
    expect(escaped).toBeGreaterThan(200)
    expect(escaped).toBeLessThan(1800)
  })

  it('are what JSON.stringify writes for a create as the API makes it', () => {
    const event = auditEvent(
      Date.parse('2026-11-25T09:00:00.000Z'),
      'token.created',
      { type: 'token', id: 'cactor', usage: 'sk', address: '127.0.0.1', requestId: 'req-1' },
      { type: 'token', id: 'ctoken' },
      'alice',
      { usage: 'pk', scopes: ['styles:read'] },
    )
    const token: TokenRecord = {
      id: 'ctoken',
      username: 'alice',
      usage: 'pk',
      isDefault: false,
      note: 'n',
      scopes: ['styles:read'],
      allowedUrls: null,
      scopeless: false,
      keyId: 'k1',
      created: '2026-11-25T09:00:00.000Z',
      modified: '2026-11-25T09:00:00.000Z',
    }
    const { tokens, audit, outbox, escapes } = rowsJson([token], [event])
    expect(escapes).toBe(false)
    expect(tokens).toBe(
      '[{"id":"ctoken","username":"alice","usage":"pk","is_default":0,"scopeless":0,"key_id":"k1","created":"2026-11-25T09:00:00.000Z","modified":"2026-11-25T09:00:00.000Z"}]',
    )
    expect(JSON.parse(audit)).toEqual([auditRow(event, event.details)])
    expect(JSON.parse(outbox)).toEqual([outboxRow(event, event)])
    expect([tokens, audit, outbox]).toEqual(stringified([token], [event]))
    expect(tokenDocument(token)).toBe(
      '{"id":"ctoken","usage":"pk","client":"api","default":false,"scopes":["styles:read"],"note":"n","created":"2026-11-25T09:00:00.000Z","modified":"2026-11-25T09:00:00.000Z"}',
    )
  })
})
