import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { TelemetryConfig } from './config.js'
import { type KeyValue, keyValues } from './schema.js'

/**
 * The server's version, from its package.json: two folders up from src/telemetry, three from
 * dist/src/telemetry. Read once; `unknown` when neither is there (a bundle).
 */
function readVersion(): string {
  for (const up of ['../..', '../../..']) {
    try {
      const file = path.join(import.meta.dirname, up, 'package.json')
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === '@tessera/server' && typeof pkg.version === 'string') return pkg.version
    } catch {}
  }
  return 'unknown'
}

let version: string | undefined
export const serviceVersion = () => {
  version ??= readVersion()
  return version
}

/** This process, among the instances (and workers) of the service: one id per process. */
const instanceId = randomUUID()

/** What every export says of where it comes from: the OTLP Resource and scope. */
export interface Origin {
  resource: { attributes: KeyValue[] }
  scope: { name: string; version: string }
}

/**
 * service.name (OTEL_SERVICE_NAME over OTEL_RESOURCE_ATTRIBUTES' own, `tessera` by default),
 * service.version and service.instance.id, then OTEL_RESOURCE_ATTRIBUTES, which the operator
 * may use to name the instance or version otherwise.
 */
export function originOf(config: TelemetryConfig): Origin {
  const attributes = new Map<string, string>([
    ['service.version', serviceVersion()],
    ['service.instance.id', instanceId],
    ['telemetry.sdk.name', 'tessera'],
    ['telemetry.sdk.language', 'nodejs'],
    ['telemetry.sdk.version', serviceVersion()],
    ...config.resource,
  ])
  attributes.delete('service.name')
  return {
    resource: { attributes: keyValues([['service.name', config.serviceName], ...attributes]) },
    scope: { name: 'tessera', version: serviceVersion() },
  }
}
