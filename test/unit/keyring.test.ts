import { chmodSync, mkdtempSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ConfigError } from '../../src/config.js'
import { Keyring, keyFileName } from '../../src/tokens/keyring.js'

afterEach(() => {
  vi.useRealTimers()
})

describe('the key file', () => {
  it('is created 0600 in a DATA_DIR made 0700, and refused once open to other users', () => {
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), 'tessera-keyring-')), 'data')
    Keyring.fromDataDir(dataDir)
    const file = path.join(dataDir, keyFileName)
    expect(statSync(dataDir).mode & 0o777).toBe(0o700)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    chmodSync(file, 0o644)
    expect(() => Keyring.fromDataDir(dataDir)).toThrow(ConfigError)
    expect(() => Keyring.fromDataDir(dataDir)).toThrow(
      `${file} is readable by other users (mode 0644); run chmod 600 ${file}`,
    )
  })

  it('opened to others while the server runs leaves the ring as it was, without failing', () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-keyring-'))
    const ring = Keyring.fromDataDir(dataDir)
    const first = ring.current
    const file = path.join(dataDir, keyFileName)
    const added = { id: 'kadded', secret: Buffer.alloc(32, 7).toString('base64') }
    const keys = JSON.parse(readFileSync(file, 'utf8')).keys
    writeFileSync(file, JSON.stringify({ keys: [...keys, added] }))
    chmodSync(file, 0o644)
    utimesSync(file, new Date(), new Date(Date.now() + 5000))
    vi.setSystemTime(Date.now() + 2000)
    expect(ring.get(added.id)).toBeUndefined()
    expect(ring.current.id).toBe(first.id)
    chmodSync(file, 0o600)
    vi.setSystemTime(Date.now() + 2000)
    expect(ring.get(added.id)?.id).toBe(added.id)
  })
})
