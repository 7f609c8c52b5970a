import { readEnv } from '../src/config.js'

/**
 * Every environment variable Tessera reads, in the order `readEnv` asks for them: taken from
 * `readEnv` itself (a source that records each name asked of it), so that a variable the service
 * learns to read is cleared here too.
 */
export const tesseraVariables: readonly string[] = (() => {
  const asked = new Set<string>()
  const recorder = new Proxy({} as NodeJS.ProcessEnv, {
    get(_, name) {
      if (typeof name === 'string') asked.add(name)
      return undefined
    },
  })
  // No .env can exist below /dev/null: only the source is read.
  readEnv(recorder, '/dev/null/.env')
  if (!asked.has('PORT')) throw new Error(`readEnv asked for no PORT: ${[...asked].join(', ')}`)
  return [...asked]
})()

/**
 * The environment of a server or CLI a test starts: the caller's (PATH, HOME, NODE_OPTIONS…)
 * without any variable Tessera reads, then the test's own. A PORT, PUBLIC_URL or DATABASE_URL
 * set in the shell that runs `npm test` must not configure the processes under test.
 */
export function childEnv(own: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of tesseraVariables) delete env[name]
  return { ...env, ...own }
}
