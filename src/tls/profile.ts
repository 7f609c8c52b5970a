import { createPrivateKey } from 'node:crypto'
import { createSecureContext, getCiphers, type SecureContextOptions } from 'node:tls'

/**
 * The TLS the server offers: Mozilla's "intermediate" configuration (Server Side TLS
 * guidelines 6.0), TLS 1.2 and 1.3 with forward-secret AEAD suites only. Node's defaults also
 * offer CBC suites on TLS 1.2 (LUCKY13 to testssl.sh). TLS_MIN_VERSION and TLS_CIPHERS change it.
 */
export interface TlsProfile {
  minVersion: TlsVersion
  /** TLS 1.2 cipher suites, OpenSSL names; TLS 1.3's suites are always those of the profile. */
  ciphers: string[]
}

export const tlsVersions = ['TLSv1.2', 'TLSv1.3'] as const
export type TlsVersion = (typeof tlsVersions)[number]

/** Mozilla intermediate's TLS 1.2 suites, in its order (OpenSSL names). */
export const intermediateCiphers = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
]

/** TLS 1.3's suites (all AEAD). Node turns TLS 1.3 off when `ciphers` names none of them. */
const tls13Suites = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
]

export const defaultTlsProfile: TlsProfile = { minVersion: 'TLSv1.2', ciphers: intermediateCiphers }

const known = new Set(getCiphers().filter((name) => !name.startsWith('tls_')))

/** The first of `ciphers` that is not a TLS 1.2 suite this Node's OpenSSL knows, if any. */
export const unknownCipher = (ciphers: string[]): string | undefined =>
  ciphers.find((name) => !known.has(name.toLowerCase()))

/**
 * The profile's key exchange groups: the post-quantum hybrid first where OpenSSL has it
 * (3.5 and later), then X25519, P-256 and P-384.
 */
const curves = (() => {
  const classic = 'X25519:prime256v1:secp384r1'
  try {
    createSecureContext({ ecdhCurve: `X25519MLKEM768:${classic}` })
    return `X25519MLKEM768:${classic}`
  } catch {
    return classic
  }
})()

/** Node's options for the HTTPS server (and createSecureContext) under `profile`. */
export function serverTlsOptions(profile: TlsProfile = defaultTlsProfile): SecureContextOptions {
  return {
    minVersion: profile.minVersion,
    ciphers: [...tls13Suites, ...profile.ciphers].join(':'),
    ecdhCurve: curves,
    // The profile leaves the choice among its suites to the client (which knows its hardware).
    honorCipherOrder: false,
  }
}

/** The kind of key a TLS 1.2 suite's server certificate must have (ECDSA suites: EC or EdDSA). */
const keyKind = (suite: string) => (suite.toUpperCase().includes('ECDSA') ? 'ec' : 'rsa')

/**
 * Why TLS 1.2 clients could not connect with this private key under `profile` (no suite of
 * TLS_CIPHERS signs with its kind of key), or undefined when they can.
 */
export function keyMismatch(profile: TlsProfile, key: Buffer): string | undefined {
  if (profile.minVersion === 'TLSv1.3') return undefined
  const type = createPrivateKey(key).asymmetricKeyType ?? ''
  const kind = type.startsWith('rsa') ? 'rsa' : 'ec'
  if (profile.ciphers.some((suite) => keyKind(suite) === kind)) return undefined
  return `TLS_CIPHERS has no suite for the certificate's ${kind === 'rsa' ? 'RSA' : 'EC'} key: TLS 1.2 clients could not connect`
}
