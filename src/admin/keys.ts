import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { type Stats, statSync } from 'node:fs'
import path from 'node:path'
import { ConfigError, systemReason } from '../config.js'
import { randomAlnum } from '../ids.js'
import { readKeyFile, writeKeyFile } from '../key-file.js'
import { isoTime } from '../time.js'

/**
 * What an operator key may do on /admin/v1. `admin`: everything. `verifier`: what
 * `@tessera/verifier` needs inside an API behind Tessera (introspection, credit leases, usage
 * reports, the event stream) and nothing else. Each admin route declares the scope it needs
 * (src/http/admin/routes.ts); an `admin` key has every scope.
 */
export const operatorScopes = ['admin', 'verifier'] as const
export type OperatorScope = (typeof operatorScopes)[number]

export const isOperatorScope = (value: unknown): value is OperatorScope =>
  operatorScopes.includes(value as OperatorScope)

/** Whether a key of scope `held` may use a route that needs `needed`. */
export const scopeAllows = (held: OperatorScope, needed: OperatorScope) =>
  held === 'admin' || held === needed

/** An operator key as stored: never its secret, only the SHA-256 of the whole key string. */
export interface AdminKey {
  id: string
  /** Hex SHA-256 of the key string. */
  hash: string
  /** Absent: `admin`, as every key made before scopes existed. */
  scope?: string
  created?: string
  note?: string
  revoked?: string
}

/** What `admin-key create` hands the operator, once. */
export interface NewAdminKey {
  id: string
  key: string
  scope: OperatorScope
  created: string
}

/** The key that presented a string, as `verify` finds it. */
export interface VerifiedKey {
  id: string
  scope: OperatorScope
}

export const adminKeyFileName = 'admin-keys.json'
const idPattern = /^[A-Za-z0-9_-]{1,32}$/
/** Printable ASCII without spaces and commas (the list's separator). */
const secretPattern = /^[\x21-\x2b\x2d-\x7e]+$/
const minSecretLength = 32
const malformed = 'ADMIN_KEYS must be a comma-separated list of id:secret or id@scope:secret'

const sha256 = (text: string) => createHash('sha256').update(text).digest()

/** `tsa_<12 of [a-z0-9]>_<43 base64url>`: 256 random bits, and a prefix secret scanners can match. */
export function newAdminKey(now: number, scope: OperatorScope): NewAdminKey {
  const id = randomAlnum(12)
  const key = `tsa_${id}_${randomBytes(32).toString('base64url')}`
  return { id, key, scope, created: isoTime(now) }
}

/** A key's entry of ADMIN_KEYS: `id:secret` for an `admin` key, `id@scope:secret` otherwise. */
export const adminKeyEntry = (id: string, scope: OperatorScope, secret: string) =>
  scope === 'admin' ? `${id}:${secret}` : `${id}@${scope}:${secret}`

/**
 * Parses `ADMIN_KEYS`: `id:secret` or `id@scope:secret`, comma-separated; the secret is what the
 * operator presents. An entry is cut at its first `:`: the secret may hold `:` and `@`, the id
 * holds neither, so an `@` before the first `:` can only be a scope (such an entry was refused
 * before scopes existed) and every earlier value keeps its meaning, with the `admin` scope.
 */
export function parseAdminKeys(value: string): AdminKey[] {
  const keys = value.split(',').map((entry) => {
    const at = entry.indexOf(':')
    const head = at < 0 ? '' : entry.slice(0, at)
    const sign = head.indexOf('@')
    const id = (sign < 0 ? head : head.slice(0, sign)).trim()
    const scope = sign < 0 ? undefined : head.slice(sign + 1).trim()
    const secret = entry.slice(at + 1).trim()
    if (at < 1 || !idPattern.test(id) || !secretPattern.test(secret))
      throw new ConfigError(malformed)
    if (scope !== undefined && !isOperatorScope(scope)) {
      throw new ConfigError(
        `ADMIN_KEYS: key "${id}" has an unknown scope "${scope}" (${operatorScopes.join(' or ')})`,
      )
    }
    if (secret.length < minSecretLength) {
      throw new ConfigError(
        `ADMIN_KEYS: key "${id}" must have a secret of at least ${minSecretLength} characters`,
      )
    }
    const key: AdminKey = { id, hash: sha256(secret).toString('hex') }
    if (scope !== undefined) key.scope = scope
    return key
  })
  if (new Set(keys.map((k) => k.id)).size !== keys.length) {
    throw new ConfigError('ADMIN_KEYS: key ids must be unique')
  }
  return keys
}

/**
 * Operator keys for /admin/v1: from ADMIN_KEYS, or else a 0600 file in DATA_DIR that holds only
 * hashes, written by `tessera admin-key create` and `revoke`. The file is checked on every
 * admin request (one stat) and re-read when it changed, so that the CLI's changes count at once.
 */
export class AdminKeys {
  private keys: AdminKey[]
  private hashes: Buffer[]
  private seen = ''

  private constructor(
    keys: AdminKey[],
    /** The key file; undefined when the keys come from ADMIN_KEYS. */
    readonly file: string | undefined,
    private readonly onError: (err: unknown) => void,
  ) {
    this.keys = keys
    this.hashes = keys.map((k) => Buffer.from(k.hash, 'hex'))
  }

  /** From ADMIN_KEYS, or the key file of `dataDir` (absent: no key yet). Throws ConfigError. */
  static open(
    config: { adminKeys?: string; dataDir: string },
    onError: (err: unknown) => void = () => {},
  ): AdminKeys {
    if (config.adminKeys !== undefined) {
      return new AdminKeys(parseAdminKeys(config.adminKeys), undefined, onError)
    }
    const store = new AdminKeys([], path.join(config.dataDir, adminKeyFileName), onError)
    try {
      store.load()
    } catch (err) {
      if (err instanceof ConfigError) throw err
      throw new ConfigError(
        `the admin key file in ${config.dataDir} cannot be used: ${systemReason(err)}`,
      )
    }
    return store
  }

  /**
   * The live key whose string this is, with its scope, or undefined. The presented string is
   * hashed and compared with every stored hash in constant time, without stopping at a match. A
   * key of a scope this version does not know (a later version's file) is never valid.
   */
  verify(presented: string): VerifiedKey | undefined {
    this.refresh()
    const hash = sha256(presented)
    let found: VerifiedKey | undefined
    for (let i = 0; i < this.keys.length; i++) {
      const key = this.keys[i] as AdminKey
      const scope = key.scope ?? 'admin'
      if (
        timingSafeEqual(hash, this.hashes[i] as Buffer) &&
        key.revoked === undefined &&
        isOperatorScope(scope)
      ) {
        found ??= { id: key.id, scope }
      }
    }
    return found
  }

  /** Every key, revoked ones too, oldest first: without their hashes, with their scopes. */
  list(): (Omit<AdminKey, 'hash' | 'scope'> & { scope: string })[] {
    this.refresh()
    return this.keys.map(({ hash: _, scope, id, ...rest }) => ({
      id,
      scope: scope ?? 'admin',
      ...rest,
    }))
  }

  /** A new key in the key file; its string is answered here and never again. */
  create(now: number, scope: OperatorScope, note?: string): NewAdminKey {
    const file = this.writable()
    this.load()
    const made = newAdminKey(now, scope)
    const key: AdminKey = {
      id: made.id,
      hash: sha256(made.key).toString('hex'),
      scope,
      created: made.created,
    }
    if (note !== undefined) key.note = note
    this.write(file, [...this.keys, key])
    return made
  }

  /** Marks the key revoked (kept in the file, so that `list` shows when); undefined if unknown. */
  revoke(id: string, now: number): { revoked: string; changed: boolean } | undefined {
    const file = this.writable()
    this.load()
    const key = this.keys.find((k) => k.id === id)
    if (key === undefined) return undefined
    if (key.revoked !== undefined) return { revoked: key.revoked, changed: false }
    const revoked = isoTime(now)
    this.write(
      file,
      this.keys.map((k) => (k.id === id ? { ...k, revoked } : k)),
    )
    return { revoked, changed: true }
  }

  private writable(): string {
    if (this.file === undefined) {
      throw new ConfigError('ADMIN_KEYS is set: change it on every instance instead')
    }
    return this.file
  }

  /** Re-reads the file when it changed; a file that cannot be used now leaves no key valid. */
  private refresh() {
    if (this.file === undefined) return
    try {
      this.load()
    } catch (err) {
      this.set([], 'unusable')
      this.onError(err)
    }
  }

  private load() {
    if (this.file === undefined) return
    let stat: Stats
    try {
      stat = statSync(this.file)
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT') throw err
      return this.set([], 'absent')
    }
    const version = `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.mode}`
    if (version === this.seen) return
    // Whoever can write the file can make their own key trusted.
    const raw = readKeyFile(this.file, stat, { exact: false }) as { keys?: unknown }
    if (!Array.isArray(raw.keys) || !raw.keys.every(isStoredKey)) {
      throw new ConfigError(`${this.file} is not an admin key file`)
    }
    this.set(raw.keys, version)
  }

  private set(keys: AdminKey[], version: string) {
    this.keys = keys
    this.hashes = keys.map((k) => Buffer.from(k.hash, 'hex'))
    this.seen = version
  }

  private write(file: string, keys: AdminKey[]) {
    writeKeyFile(file, { keys })
    this.load()
  }
}

const isStoredKey = (k: unknown): k is AdminKey => {
  const key = k as AdminKey
  return (
    typeof key === 'object' &&
    key !== null &&
    typeof key.id === 'string' &&
    typeof key.hash === 'string' &&
    /^[0-9a-f]{64}$/.test(key.hash) &&
    (key.scope === undefined || typeof key.scope === 'string')
  )
}
