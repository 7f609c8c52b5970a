import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { AdminKeys, parseAdminKeys } from '../../src/admin/keys.js'

const secret = (c: string) => c.repeat(32)

describe('ADMIN_KEYS', () => {
  it('parses id:secret entries; the secret may hold colons; spaces around entries are trimmed', () => {
    const keys = parseAdminKeys(`ops:${secret('a')}, ci-2 : b:${secret('b')}`)
    expect(keys.map((k) => k.id)).toEqual(['ops', 'ci-2'])
    const store = AdminKeys.open({
      adminKeys: `ops:${secret('a')}, ci-2 : b:${secret('b')}`,
      dataDir: '/nonexistent',
    })
    expect(store.verify(secret('a'))).toEqual({ id: 'ops', scope: 'admin' })
    expect(store.verify(`b:${secret('b')}`)).toEqual({ id: 'ci-2', scope: 'admin' })
    expect(store.verify(secret('c'))).toBeUndefined()
    expect(store.verify('')).toBeUndefined()
  })

  it('gives a scope as id@scope:secret; an entry without one (secret with @ and : too) is admin', () => {
    const value = [
      `edge@verifier:${secret('v')}`,
      ` edge-2 @ verifier : a@b:${secret('w')}`,
      `full@admin:${secret('x')}`,
      `old:x@verifier:${secret('y')}`,
    ].join(',')
    expect(parseAdminKeys(value).map((k) => [k.id, k.scope])).toEqual([
      ['edge', 'verifier'],
      ['edge-2', 'verifier'],
      ['full', 'admin'],
      ['old', undefined],
    ])
    const store = AdminKeys.open({ adminKeys: value, dataDir: '/nonexistent' })
    expect(store.verify(secret('v'))).toEqual({ id: 'edge', scope: 'verifier' })
    expect(store.verify(`a@b:${secret('w')}`)).toEqual({ id: 'edge-2', scope: 'verifier' })
    // Cut at the first colon: the secret of `old` holds `@verifier`, and the key is full.
    expect(store.verify(`x@verifier:${secret('y')}`)).toEqual({ id: 'old', scope: 'admin' })
    expect(store.list()).toEqual([
      { id: 'edge', scope: 'verifier' },
      { id: 'edge-2', scope: 'verifier' },
      { id: 'full', scope: 'admin' },
      { id: 'old', scope: 'admin' },
    ])
  })

  it.each([
    ['junk', 'ADMIN_KEYS must be a comma-separated list of id:secret'],
    [`ops@:${secret('a')}`, 'ADMIN_KEYS: key "ops" has an unknown scope "" (admin or verifier)'],
    [
      `ops@reader:${secret('a')}`,
      'ADMIN_KEYS: key "ops" has an unknown scope "reader" (admin or verifier)',
    ],
    [
      `ops@verifier@admin:${secret('a')}`,
      'ADMIN_KEYS: key "ops" has an unknown scope "verifier@admin" (admin or verifier)',
    ],
    [`@verifier:${secret('a')}`, 'ADMIN_KEYS must be a comma-separated list of id:secret'],
    [`:${secret('a')}`, 'ADMIN_KEYS must be a comma-separated list of id:secret'],
    [`bad id:${secret('a')}`, 'ADMIN_KEYS must be a comma-separated list of id:secret'],
    ['ops:', 'ADMIN_KEYS must be a comma-separated list of id:secret'],
    [`ops:${secret('a')},`, 'ADMIN_KEYS must be a comma-separated list of id:secret'],
    [
      `ops:${'a'.repeat(20)} ${'b'.repeat(20)}`,
      'ADMIN_KEYS must be a comma-separated list of id:secret',
    ],
    ['ops:short', 'ADMIN_KEYS: key "ops" must have a secret of at least 32 characters'],
    [`ops:${secret('a')},ops:${secret('b')}`, 'ADMIN_KEYS: key ids must be unique'],
  ])('refuses %j', (value, message) => {
    expect(() => parseAdminKeys(value)).toThrow(message)
  })
})

describe('the key file', () => {
  it('holds no key until one is made; a file that breaks later leaves no key valid', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-admin-keys-'))
    const errors: unknown[] = []
    const store = AdminKeys.open({ dataDir }, (err) => errors.push(err))
    expect(store.list()).toEqual([])
    const made = store.create(Date.parse('2026-11-22T12:00:00.000Z'), 'verifier')
    expect(made.created).toBe('2026-11-22T12:00:00.000Z')
    expect(store.verify(made.key)).toEqual({ id: made.id, scope: 'verifier' })
    writeFileSync(path.join(dataDir, 'admin-keys.json'), 'not json')
    expect(store.verify(made.key)).toBeUndefined()
    expect(errors).toHaveLength(1)
  })
})
