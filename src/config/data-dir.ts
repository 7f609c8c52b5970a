import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs'
import { ConfigError, systemReason } from './error.js'

/** DATA_DIR exists (made 0700) and can be written, or start-up stops saying so in one line. */
export function prepareDataDir(dir: string) {
  try {
    if (existsSync(dir) && !statSync(dir).isDirectory()) throw new Error('not a directory')
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK)
  } catch (err) {
    throw new ConfigError(`DATA_DIR cannot be used: ${dir}: ${systemReason(err)}`)
  }
}
