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
    expect(store.verify(secret('a'))).toBe('ops')
    expect(store.verify(`b:${secret('b')}`)).toBe('ci-2')
    expect(store.verify(secret('c'))).toBeUndefined()
    expect(store.verify('')).toBeUndefined()
  })

  it.each([
    ['junk', 'ADMIN_KEYS must be a comma-separated list of id:secret'],
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
    const made = store.create(Date.parse('2026-11-22T12:00:00.000Z'))
    expect(made.created).toBe('2026-11-22T12:00:00.000Z')
    expect(store.verify(made.key)).toBe(made.id)
    writeFileSync(path.join(dataDir, 'admin-keys.json'), 'not json')
    expect(store.verify(made.key)).toBeUndefined()
    expect(errors).toHaveLength(1)
  })
})
