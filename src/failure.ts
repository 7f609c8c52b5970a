import { ConfigError } from './config.js'

const databaseCode = /^[0-9A-Z]{5}$/

/**
 * Why start-up (or a CLI command) failed, in one line, when the cause is the configuration or
 * the world around the process (a file, a port, the database) rather than a bug. Undefined for
 * anything else: a bug keeps its stack trace.
 */
export function describeFailure(err: unknown): string | undefined {
  if (err instanceof ConfigError) return err.message
  if (typeof err !== 'object' || err === null) return undefined
  const { code, message } = err as { code?: unknown; message?: unknown }
  if (typeof code !== 'string' || typeof message !== 'string') return undefined
  const line = message.split('\n')[0]
  // PostgreSQL's SQLSTATE (a database that does not exist, a refused login) or a socket error.
  if (databaseCode.test(code)) return `the database refused: ${line}`
  if (code.startsWith('SQLITE_')) return `the SQLite database cannot be used: ${line}`
  if (/^E[A-Z]+$/.test(code)) return line
  return undefined
}
