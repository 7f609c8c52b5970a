import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { childEnv } from '../environment.js'

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)

/** A fresh DATA_DIR for the commands of one test file. */
export const dataDir = (name: string) => mkdtempSync(path.join(tmpdir(), `tessera-${name}-`))

/**
 * Runs the real `tessera` (bin/tessera.js, the build) as a person at a terminal would, on
 * `dataDir` alone (none of the caller's Tessera variables): exit status, stdout and stderr.
 */
export async function cli(dataDir: string, ...args: string[]) {
  try {
    const { stdout, stderr } = await exec(
      process.execPath,
      [path.join(root, 'bin/tessera.js'), ...args],
      { env: childEnv({ DATA_DIR: dataDir }), cwd: dataDir },
    )
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

/** A command's JSON answer, which must have succeeded. */
export async function json(dataDir: string, ...args: string[]) {
  const res = await cli(dataDir, ...args)
  if (res.code !== 0) throw new Error(`tessera ${args.join(' ')}: ${res.code} ${res.stderr}`)
  return JSON.parse(res.stdout)
}
