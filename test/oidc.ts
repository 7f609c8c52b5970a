import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { createServer as createNetServer } from 'node:net'
import path from 'node:path'
import Provider, { type KoaContextWithOIDC } from 'oidc-provider'
import { generateSelfSigned } from '../src/tls/self-signed.js'

/** What the provider says of a person (its `sub` is their login at the provider). */
export interface ProviderPerson {
  email?: string
  email_verified?: boolean
  name?: string
}

export const clientId = 'tessera'
export const clientSecret = 'a-client-secret-for-the-test-only-0123456789'

export interface TestProvider {
  issuer: string
  /** The provider's self-signed certificate (PEM): what OIDC_CA_FILE points at. */
  certFile: string
  /** People by login; change them between sign-ins (a changed email, say). */
  people: Map<string, ProviderPerson>
  close(): Promise<void>
}

/** A loopback port free now (the server under test is then started on it). */
export async function freePort(): Promise<number> {
  const server = createNetServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/**
 * A real OpenID Connect provider (the npm package oidc-provider) on a loopback HTTPS port, with
 * one confidential client whose redirect URI is given. Its development login form signs in any
 * login of `people` (any password); consent is granted without asking.
 */
export async function startProvider(redirectUri: string, dir: string): Promise<TestProvider> {
  const { cert, key } = generateSelfSigned()
  const certFile = path.join(dir, 'provider-cert.pem')
  writeFileSync(certFile, cert)
  let handler: Parameters<typeof createServer>[1] = (_req, res) => res.end()
  const server: Server = createServer({ cert, key }, (req, res) => handler?.(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const issuer = `https://127.0.0.1:${port}`
  const people = new Map<string, ProviderPerson>()
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    async findAccount(_ctx: KoaContextWithOIDC, id: string) {
      const person = people.get(id)
      if (person === undefined) return undefined
      return { accountId: id, claims: async () => ({ sub: id, ...person }) }
    },
    async loadExistingGrant(ctx: KoaContextWithOIDC) {
      const { client, session } = ctx.oidc
      if (client === undefined || session?.accountId === undefined) return undefined
      const grant = new ctx.oidc.provider.Grant({
        clientId: client.clientId,
        accountId: session.accountId,
      })
      grant.addOIDCScope('openid email profile')
      await grant.save()
      return grant
    },
    cookies: { keys: ['a-cookie-key-for-the-test-only'] },
    features: { devInteractions: { enabled: true } },
  })
  const callback = provider.callback()
  handler = (req, res) => callback(req, res)
  return {
    issuer,
    certFile,
    people,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
