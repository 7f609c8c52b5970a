import { createHmac } from 'node:crypto'
import { mkdtempSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { api } from './client.js'
import { type ServerProcess, startServer, tessera } from './server.js'

const signer = (token: string, keys: { id: string; secret: string }[]) => {
  const [usage, payload, signature] = token.split('.')
  return keys.find(
    (k) =>
      createHmac('sha256', Buffer.from(k.secret, 'base64'))
        .update(`${usage}.${payload}`)
        .digest()
        .subarray(0, 16)
        .toString('base64url') === signature,
  )?.id
}

const retrieve = async (server: ServerProcess, token: string) =>
  (await api(server, 'GET', '/tokens/v2', token)).body as { code: string }

describe('tessera keys rotate', () => {
  it('keeps old tokens valid with the same strings across a restart, and signs new ones with the new key', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-keys-'))
    let server = await startServer({ DATA_DIR: dataDir })
    const keyFile = path.join(dataDir, 'signing-keys.json')
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    expect(statSync(path.join(dataDir, 'tls', 'key.pem')).mode & 0o777).toBe(0o600)

    await tessera(server.env, 'account', 'create', 'rot')
    const before = await tessera(
      server.env,
      'token',
      'create',
      'rot',
      '--scopes',
      'tokens:read,tokens:write',
      '--note',
      'test',
    )
    const firstKey = JSON.parse(readFileSync(keyFile, 'utf8')).keys[0].id
    const rotated = await tessera(server.env, 'keys', 'rotate')
    const keys = JSON.parse(readFileSync(keyFile, 'utf8')).keys
    expect(keys.map((k: { id: string }) => k.id)).toEqual([firstKey, rotated.id])
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)

    // Made by the CLI with the new key while the server runs: valid there at once.
    const during = await tessera(
      server.env,
      'token',
      'create',
      'rot',
      '--scopes',
      'tokens:read',
      '--note',
      'test',
    )
    expect(signer(during.token, keys)).toBe(rotated.id)
    expect((await retrieve(server, during.token)).code).toBe('TokenValid')
    await server.stop()

    server = await startServer({ DATA_DIR: dataDir })
    try {
      expect((await retrieve(server, before.token)).code).toBe('TokenValid')
      expect(signer(before.token, keys)).toBe(firstKey)
      const after = await tessera(
        server.env,
        'token',
        'create',
        'rot',
        '--scopes',
        'styles:read',
        '--note',
        'test',
      )
      expect(signer(after.token, keys)).toBe(rotated.id)
      const overHttp = await api(server, 'POST', '/tokens/v2/rot', before.token, { note: 'http' })
      expect(signer(overHttp.body.token, keys)).toBe(rotated.id)
    } finally {
      await server.stop()
    }
  })
})
