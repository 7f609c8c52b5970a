import { isIP } from 'node:net'
import {
  defaultTlsProfile,
  type TlsProfile,
  type TlsVersion,
  tlsVersions,
  unknownCipher,
} from '../tls/profile.js'
import type { Env } from './env.js'
import { ConfigError } from './error.js'
import { integer, parseUrl } from './values.js'

export interface HttpConfig {
  host: string
  port: number
  /**
   * Behind a TLS-terminating proxy (TRUST_PROXY): plain HTTP, and only requests forwarded with
   * `X-Forwarded-Proto: https` are served.
   */
  trustProxy: boolean
  /**
   * Which X-Forwarded-For entries the proxies wrote, when behind one: the last `n` (a hop
   * count), or those written by the proxies at these addresses (CIDR ranges, or proxy-addr's
   * `loopback`, `linklocal`, `uniquelocal`). The client's address is the entry just before.
   */
  proxy?: number | string[]
  /**
   * Origin written into Link headers and the links people open (setup links, invitations);
   * undefined means https://HOST:<listening port> (CONTRACT.md §1; see configuredOrigin).
   */
  publicUrl?: string
  tls?: { cert: string; key: string }
  /** The protocol versions and TLS 1.2 suites offered (TLS_MIN_VERSION, TLS_CIPHERS). */
  tlsProfile: TlsProfile
}

/** Names proxy-addr (Fastify's trustProxy) gives to address ranges. */
const proxyRangeNames = ['loopback', 'linklocal', 'uniquelocal']
const trustProxyForms =
  'a number of proxies (0, 1, 2, ...) or their addresses (CIDR ranges, loopback, linklocal, uniquelocal)'

/** An address, or a CIDR range of at least one bit (`0.0.0.0/0` would trust every client). */
function proxyRange(entry: string) {
  if (proxyRangeNames.includes(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (rest.length > 0 || family === 0) return false
  if (prefix === undefined) return true
  const bits = Number(prefix)
  return /^\d{1,3}$/.test(prefix) && bits >= 1 && bits <= (family === 4 ? 32 : 128)
}

/**
 * TRUST_PROXY: unset, `0` or `false` is no proxy; `1` or `true` one proxy (the client address
 * is the last X-Forwarded-For entry, the one the proxy appended), `n` that many in a row;
 * otherwise the proxies' addresses, comma-separated. Never "trust every hop": the first entry
 * of X-Forwarded-For is whatever the client wrote.
 */
function trustProxy(value: string | undefined): number | string[] | undefined {
  if (value === undefined || value === '0' || value === 'false') return undefined
  if (value === 'true') return 1
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    if (hops > 16) throw new ConfigError(`TRUST_PROXY must be at most 16 proxies, got "${value}"`)
    return hops === 0 ? undefined : hops
  }
  const ranges = value
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '')
  const bad = ranges.find((range) => !proxyRange(range))
  if (ranges.length === 0 || (bad !== undefined && ranges.length === 1)) {
    throw new ConfigError(`TRUST_PROXY must be ${trustProxyForms}, got "${value}"`)
  }
  if (bad !== undefined) {
    throw new ConfigError(`TRUST_PROXY: not an address, a CIDR range or a range name: "${bad}"`)
  }
  return ranges
}

function publicUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  const url = parseUrl(value, `PUBLIC_URL is not a URL: "${value}"`)
  if (url.protocol !== 'https:') throw new ConfigError('PUBLIC_URL must be an https:// URL')
  return value.replace(/\/+$/, '')
}

/**
 * TLS_MIN_VERSION (TLSv1.2 or TLSv1.3) and TLS_CIPHERS (TLS 1.2 suites, OpenSSL names separated
 * by colons or commas); unset, Mozilla's intermediate profile.
 */
function tlsProfile(env: Env): TlsProfile {
  const minVersion = env.TLS_MIN_VERSION ?? defaultTlsProfile.minVersion
  if (!tlsVersions.includes(minVersion as TlsVersion)) {
    throw new ConfigError(`TLS_MIN_VERSION must be TLSv1.2 or TLSv1.3, got "${minVersion}"`)
  }
  if (env.TLS_CIPHERS === undefined) {
    return { minVersion: minVersion as TlsVersion, ciphers: defaultTlsProfile.ciphers }
  }
  if (minVersion === 'TLSv1.3') {
    throw new ConfigError(
      'TLS_CIPHERS names TLS 1.2 suites, and TLS_MIN_VERSION=TLSv1.3 turns 1.2 off',
    )
  }
  const ciphers = env.TLS_CIPHERS.split(/[:,]/)
    .map((name) => name.trim())
    .filter((name) => name !== '')
  const bad = ciphers.length === 0 ? env.TLS_CIPHERS : unknownCipher(ciphers)
  if (bad !== undefined) {
    throw new ConfigError(
      `TLS_CIPHERS: not a TLS 1.2 cipher suite (OpenSSL name, e.g. ECDHE-ECDSA-AES128-GCM-SHA256): "${bad}"`,
    )
  }
  return { minVersion: 'TLSv1.2', ciphers }
}

/** HOST, PORT, TLS_CERT and TLS_KEY, TLS_MIN_VERSION and TLS_CIPHERS, TRUST_PROXY, PUBLIC_URL. */
export function httpConfig(env: Env): HttpConfig {
  const port = integer('PORT', env.PORT, 8443, 0, 65535)
  if ((env.TLS_CERT === undefined) !== (env.TLS_KEY === undefined)) {
    throw new ConfigError('TLS_CERT and TLS_KEY must be given together')
  }
  const proxy = trustProxy(env.TRUST_PROXY)
  return {
    host: env.HOST ?? '127.0.0.1',
    port,
    trustProxy: proxy !== undefined,
    proxy,
    publicUrl: publicUrl(env.PUBLIC_URL),
    tls: env.TLS_CERT && env.TLS_KEY ? { cert: env.TLS_CERT, key: env.TLS_KEY } : undefined,
    tlsProfile: tlsProfile(env),
  }
}

/**
 * Whether HOST is this machine's loopback or every address: a browser there reaches the server
 * as localhost, which the self-signed certificate names too.
 */
function reachedAsLocalhost(host: string): boolean {
  if (host === 'localhost' || host === '0.0.0.0' || host === '::' || host === '::1') return true
  return isIP(host) === 4 && host.startsWith('127.')
}

/** PUBLIC_URL, or the origin HOST and PORT give (the server knows its port once listening). */
export function configuredOrigin(http: HttpConfig, port = http.port): string {
  if (http.publicUrl) return http.publicUrl
  return `https://${http.host.includes(':') ? `[${http.host}]` : http.host}:${port}`
}

/**
 * Where passkeys work: PUBLIC_URL when it is set; else, on a loopback HOST or every address,
 * https://localhost:PORT (the self-signed certificate names localhost, and browsers refuse a
 * passkey at an IP address: WebAuthn wants a domain name as relying party); else, or with a
 * certificate of the operator's own (TLS_CERT), the links' origin. `origin` is the links' origin (configuredOrigin once listening).
 */
export function passkeyOrigin(http: HttpConfig, origin: string): string {
  if (http.publicUrl) return http.publicUrl
  const url = new URL(origin)
  if (http.tls !== undefined || !reachedAsLocalhost(http.host)) return origin
  return `https://localhost${url.port === '' ? '' : `:${url.port}`}`
}
