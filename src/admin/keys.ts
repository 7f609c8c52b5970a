import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { type Stats, statSync } from 'node:fs'
import path from 'node:path'
import { ConfigError, systemReason } from '../config.js'
import { randomAlnum } from '../ids.js'
import { readKeyFile, writeKeyFile } from '../key-file.js'
import { isoTime } from '../time.js'

/** An operator key as stored: never its secret, only the SHA-256 of the whole key string. */
export interface AdminKey {
  id: string
  /** Hex SHA-256 of the key string. */
  hash: string
  created?: string
  note?: string
  revoked?: string
}

/** What `admin-key create` hands the operator, once. */
export interface NewAdminKey {
  id: string
  key: string
  created: string
}

export const adminKeyFileName = 'admin-keys.json'
const idPattern = /^[A-Za-z0-9_-]{1,32}$/
/** Printable ASCII without spaces and commas (the list's separator). */
const secretPattern = /^[\x21-\x2b\x2d-\x7e]+$/
const minSecretLength = 32
const malformed = 'ADMIN_KEYS must be a comma-separated list of id:secret'

const sha256 = (text: string) => createHash('sha256').update(text).digest()

/** `tsa_<12 of [a-z0-9]>_<43 base64url>`: 256 random bits, and a prefix secret scanners can match. */
export function newAdminKey(now: number): NewAdminKey {
  const id = randomAlnum(12)
  return { id, key: `tsa_${id}_${randomBytes(32).toString('base64url')}`, created: isoTime(now) }
}

/** Parses `ADMIN_KEYS`: `id:secret,id:secret`; the secret is what the operator presents. */
export function parseAdminKeys(value: string): AdminKey[] {
  const keys = value.split(',').map((entry) => {
    const at = entry.indexOf(':')
    const id = entry.slice(0, at).trim()
    const secret = entry.slice(at + 1).trim()
    if (at < 1 || !idPattern.test(id) || !secretPattern.test(secret))
      throw new ConfigError(malformed)
    if (secret.length < minSecretLength) {
      throw new ConfigError(
        `ADMIN_KEYS: key "${id}" must have a secret of at least ${minSecretLength} characters`,
      )
    }
    return { id, hash: sha256(secret).toString('hex') }
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
   * The id of the live key whose string this is, or undefined. The presented string is hashed
   * and compared with every stored hash in constant time, without stopping at a match.
   */
  verify(presented: string): string | undefined {
    this.refresh()
    const hash = sha256(presented)
    let found: string | undefined
    for (let i = 0; i < this.keys.length; i++) {
      const key = this.keys[i] as AdminKey
      if (timingSafeEqual(hash, this.hashes[i] as Buffer) && key.revoked === undefined) {
        found ??= key.id
      }
    }
    return found
  }

  /** Every key, revoked ones too, oldest first: without their hashes. */
  list(): Omit<AdminKey, 'hash'>[] {
    this.refresh()
    return this.keys.map(({ hash: _, ...key }) => key)
  }

  /** A new key in the key file; its string is answered here and never again. */
  create(now: number, note?: string): NewAdminKey {
    const file = this.writable()
    this.load()
    const made = newAdminKey(now)
    const key: AdminKey = {
      id: made.id,
      hash: sha256(made.key).toString('hex'),
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
    /^[0-9a-f]{64}$/.test(key.hash)
  )
}
