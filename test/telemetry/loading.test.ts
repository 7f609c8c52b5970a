import { readdirSync } from 'node:fs'
import path from 'node:path'
import { expect, it, vi } from 'vitest'

// Every module of src/telemetry but the reading of the variables is watched: a module loaded is
// noted, then loaded as it is. The index is imported after the watch is set.
const dir = path.resolve(import.meta.dirname, '../../src/telemetry')
const reader = ['index.ts', 'config.ts', 'values.ts']
const lazy = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !reader.includes(f))
  .sort()
const loaded = new Set<string>()
for (const file of lazy) {
  vi.doMock(path.join(dir, file), async (importOriginal) => {
    loaded.add(file)
    return importOriginal()
  })
}

it('loads nothing of the telemetry but the reading of its variables when it is off', async () => {
  const { telemetryConfig, telemetryFrom, telemetryOf } = await import(
    '../../src/telemetry/index.js'
  )
  const now = () => 0
  expect(await telemetryOf({}, { now })).toBeUndefined()
  expect(await telemetryFrom(telemetryConfig({}), { now })).toBeUndefined()
  expect(await telemetryOf({ OTEL_SERVICE_NAME: 'tessera' }, { now })).toBeUndefined()
  const disabled = { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }
  expect(await telemetryOf(disabled, { now })).toBeUndefined()
  expect([...loaded]).toEqual([])

  // On, every one of them is loaded: the watch sees what it is meant to see.
  const on = await telemetryOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }, { now })
  expect(on).toBeDefined()
  expect([...loaded].sort()).toEqual(lazy)
  expect(lazy).toContain('start.ts')
  expect(lazy).toContain('tracer.ts')
  await on?.shutdown(100)
})
