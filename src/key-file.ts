import { randomBytes } from 'node:crypto'
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  type Stats,
  writeFileSync,
} from 'node:fs'
import path from 'node:path'
import { ConfigError } from './config/error.js'

/**
 * Refuses a key file other users may open, as ssh refuses such a private key. `exact` says
 * whether they can read or write it, for a file whose readers could sign tokens; otherwise it is
 * only "accessible" (the admin key file holds hashes: what matters is that it is not private).
 */
function checkPrivate(file: string, stat: Stats, exact: boolean) {
  const mode = stat.mode & 0o777
  if ((mode & 0o077) === 0) return
  let how = 'accessible'
  if (exact && mode & 0o044) how = 'readable'
  else if (exact && mode & 0o022) how = 'writable'
  const octal = mode.toString(8).padStart(4, '0')
  throw new ConfigError(`${file} is ${how} by other users (mode ${octal}); run chmod 600 ${file}`)
}

/** The JSON of a key file whose `stat` the caller took, once it is known to be private. */
export function readKeyFile(file: string, stat: Stats, options: { exact: boolean }): unknown {
  checkPrivate(file, stat, options.exact)
  return JSON.parse(readFileSync(file, 'utf8'))
}

/**
 * Replaces a key file with `data` as JSON, mode 0600 in a 0700 directory. The new file is
 * created ('wx') with its mode from the first byte, synced (a key must survive a crash once it
 * is used), then renamed over the old one.
 */
export function writeKeyFile(file: string, data: unknown) {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`
  const fd = openSync(tmp, 'wx', 0o600)
  try {
    writeFileSync(fd, `${JSON.stringify(data, null, 2)}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, file)
}
