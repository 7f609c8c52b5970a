import { randomBytes } from 'node:crypto'
import { existsSync, statSync } from 'node:fs'
import path from 'node:path'
import { ConfigError } from '../config.js'
import { randomAlnum } from '../ids.js'
import { readKeyFile, writeKeyFile } from '../key-file.js'

export interface SigningKey {
  id: string
  secret: Buffer
}

const keyIdPattern = /^[A-Za-z0-9_-]{1,32}$/
const minSecretBytes = 32
const reloadIntervalMs = 1000

export const keyFileName = 'signing-keys.json'

/** Parses `SIGNING_KEYS`: `id:base64secret,id:base64secret`, oldest first, newest last. */
export function parseSigningKeys(value: string): SigningKey[] {
  const keys = value.split(',').map((entry) => {
    const at = entry.indexOf(':')
    const id = entry.slice(0, at).trim()
    const secret = Buffer.from(entry.slice(at + 1).trim(), 'base64')
    if (at < 1 || !keyIdPattern.test(id)) {
      throw new ConfigError('SIGNING_KEYS must be a comma-separated list of id:base64secret')
    }
    if (secret.length < minSecretBytes) {
      throw new ConfigError(
        `SIGNING_KEYS: key "${id}" must decode to at least ${minSecretBytes} bytes`,
      )
    }
    return { id, secret }
  })
  if (new Set(keys.map((k) => k.id)).size !== keys.length) {
    throw new ConfigError('SIGNING_KEYS: key ids must be unique')
  }
  return keys
}

export const newSigningKey = (): SigningKey => ({
  id: `k${randomAlnum(11)}`,
  secret: randomBytes(minSecretBytes),
})

export const formatSigningKeys = (keys: SigningKey[]) =>
  keys.map((k) => `${k.id}:${k.secret.toString('base64')}`).join(',')

/**
 * Signing keys never go into the database. They come from SIGNING_KEYS, or from a 0600 file in
 * DATA_DIR that the first start creates. The file is re-read (at most once a second) when a
 * key id is unknown, so that a key added by `tessera keys rotate` reaches a running server.
 */
export class Keyring {
  private keys: SigningKey[]
  private ordered: SigningKey[]
  private byId: Map<string, SigningKey>
  private fileMtimeMs = 0
  private checkedAt = 0

  private constructor(
    keys: SigningKey[],
    private readonly file?: string,
  ) {
    this.keys = keys
    this.ordered = [...keys].reverse()
    this.byId = new Map(keys.map((k) => [k.id, k]))
  }

  static fromEnv(value: string): Keyring {
    return new Keyring(parseSigningKeys(value))
  }

  /** Loads the key file in `dataDir`, creating it with one key when absent. */
  static fromDataDir(dataDir: string): Keyring {
    const file = path.join(dataDir, keyFileName)
    if (!existsSync(file)) writeSigningKeys(file, [newSigningKey()])
    const ring = new Keyring([], file)
    ring.reload()
    return ring
  }

  get current(): SigningKey {
    this.refresh()
    // biome-ignore lint/style/noNonNullAssertion: a keyring is never built empty
    return this.keys[this.keys.length - 1]!
  }

  /** Every key, newest first: new tokens are the most likely to be checked. */
  get newestFirst(): readonly SigningKey[] {
    return this.ordered
  }

  get(id: string): SigningKey | undefined {
    const key = this.byId.get(id)
    if (key === undefined && this.refresh()) return this.byId.get(id)
    return key
  }

  /** Re-reads the key file when it changed; true when the ring changed. Throttled. */
  refresh(): boolean {
    if (this.file === undefined) return false
    const now = Date.now()
    if (now - this.checkedAt < reloadIntervalMs) return false
    this.checkedAt = now
    try {
      if (statSync(this.file).mtimeMs === this.fileMtimeMs) return false
      this.reload()
    } catch {
      // A file that cannot be used now (unreadable, or open to other users) leaves the ring as
      // it is, rather than failing requests; start-up, which reads it first, says why.
      return false
    }
    return true
  }

  /** Appends a new key to the key file; returns it. Tokens signed earlier keep verifying. */
  rotate(): SigningKey {
    if (this.file === undefined) {
      throw new ConfigError('SIGNING_KEYS is set: add the new key to it on every instance')
    }
    this.reload()
    const key = newSigningKey()
    writeSigningKeys(this.file, [...this.keys, key])
    this.reload()
    return key
  }

  private reload() {
    if (this.file === undefined) return
    const stat = statSync(this.file)
    // Whoever reads the file can sign tokens; whoever writes it can make their own key trusted.
    const raw = readKeyFile(this.file, stat, { exact: true }) as {
      keys: { id: string; secret: string }[]
    }
    const keys = raw.keys.map((k) => ({ id: k.id, secret: Buffer.from(k.secret, 'base64') }))
    if (keys.length === 0) throw new ConfigError(`${this.file} holds no signing key`)
    this.keys = keys
    this.ordered = [...keys].reverse()
    this.byId = new Map(keys.map((k) => [k.id, k]))
    this.fileMtimeMs = stat.mtimeMs
  }
}

function writeSigningKeys(file: string, keys: SigningKey[]) {
  writeKeyFile(file, {
    keys: keys.map((k) => ({ id: k.id, secret: k.secret.toString('base64') })),
  })
}
