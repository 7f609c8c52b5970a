import { createHmac } from 'node:crypto'
import { mkdtempSync, readFileSync, statSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { startServer, tessera } from './server.js'

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

function api(
  url: string,
  ca: Buffer,
  method: string,
  route: string,
  token: string,
  body?: unknown,
) {
  return new Promise<{ code: string; token: string }>((resolve, reject) => {
    const req = request(`${url}${route}?access_token=${token}`, { ca, method }, (res) => {
      let text = ''
      res.on('data', (d) => {
        text += d
      })
      res.on('end', () => resolve(JSON.parse(text)))
    })
    req.on('error', reject)
    if (body !== undefined) req.setHeader('content-type', 'application/json')
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}
const retrieve = (url: string, ca: Buffer, token: string) =>
  api(url, ca, 'GET', '/tokens/v2', token)

describe('tessera keys rotate', () => {
  it('keeps old tokens valid with the same strings across a restart, and signs new ones with the new key', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'tessera-keys-'))
    let server = await startServer({ DATA_DIR: dataDir })
    const keyFile = path.join(dataDir, 'signing-keys.json')
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    expect(statSync(path.join(dataDir, 'tls', 'key.pem')).mode & 0o777).toBe(0o600)
    const ca = readFileSync(server.certFile)

    await tessera(server.env, 'account', 'create', 'rot')
    const before = await tessera(
      server.env,
      'token',
      'create',
      'rot',
      '--scopes',
      'tokens:read,tokens:write',
    )
    const firstKey = JSON.parse(readFileSync(keyFile, 'utf8')).keys[0].id
    const rotated = await tessera(server.env, 'keys', 'rotate')
    const keys = JSON.parse(readFileSync(keyFile, 'utf8')).keys
    expect(keys.map((k: { id: string }) => k.id)).toEqual([firstKey, rotated.id])
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)

    // Made by the CLI with the new key while the server runs: valid there at once.
    const during = await tessera(server.env, 'token', 'create', 'rot', '--scopes', 'tokens:read')
    expect(signer(during.token, keys)).toBe(rotated.id)
    expect((await retrieve(server.url, ca, during.token)).code).toBe('TokenValid')
    await server.stop()

    server = await startServer({ DATA_DIR: dataDir })
    try {
      expect((await retrieve(server.url, ca, before.token)).code).toBe('TokenValid')
      expect(signer(before.token, keys)).toBe(firstKey)
      const after = await tessera(server.env, 'token', 'create', 'rot', '--scopes', 'styles:read')
      expect(signer(after.token, keys)).toBe(rotated.id)
      const overHttp = await api(server.url, ca, 'POST', '/tokens/v2/rot', before.token, {
        note: 'http',
      })
      expect(signer(overHttp.token, keys)).toBe(rotated.id)
    } finally {
      await server.stop()
    }
  })
})
