import { describe, expect, it } from 'vitest'
import { otelNames, telemetryConfig } from '../../src/telemetry/config.js'

const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }

describe('the OpenTelemetry configuration', () => {
  it('is off when nothing is set, when only empty values are, and when the SDK is disabled', () => {
    expect(telemetryConfig({})).toBeUndefined()
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_SERVICE_NAME: 'x' })).toBe(
      undefined,
    )
    expect(telemetryConfig({ ...base, OTEL_SDK_DISABLED: 'TRUE' })).toBeUndefined()
    expect(telemetryConfig({ ...base, OTEL_SDK_DISABLED: 'false' })).toBeDefined()
    // Every exporter `none`: nothing to send.
    const none = { OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' }
    expect(telemetryConfig({ ...base, ...none, OTEL_LOGS_EXPORTER: 'none' })).toBeUndefined()
  })

  it('takes the spec defaults once an endpoint is set, paths appended to the base', () => {
    const config = telemetryConfig(base)
    expect(config?.serviceName).toBe('tessera')
    expect(config?.traces).toEqual({
      url: new URL('http://collector:4318/v1/traces'),
      headers: {},
      protocol: 'http/protobuf',
      timeoutMs: 10_000,
      sampling: { root: 'always_on', ratio: 1, parentBased: true },
      batching: {
        maxQueueSize: 2048,
        maxExportBatchSize: 512,
        scheduleDelayMs: 5000,
        exportTimeoutMs: 30_000,
      },
    })
    expect(config?.metrics?.url.href).toBe('http://collector:4318/v1/metrics')
    expect(config?.metrics?.intervalMs).toBe(60_000)
    expect(config?.logs?.url.href).toBe('http://collector:4318/v1/logs')
    expect(config?.logs?.batching.scheduleDelayMs).toBe(1000)
    // A base with a path and a trailing slash: the signal's path after it, once.
    const under = telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example/otlp/' })
    expect(under?.traces?.url.href).toBe('https://c.example/otlp/v1/traces')
  })

  it('uses a per-signal endpoint as it is, and exports only the signals with one', () => {
    const config = telemetryConfig({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tempo:4318/custom/path',
    })
    expect(config?.traces?.url.href).toBe('http://tempo:4318/custom/path')
    expect(config?.metrics).toBeUndefined()
    expect(config?.logs).toBeUndefined()
    // An exporter named without an endpoint: the spec's default endpoint.
    const named = telemetryConfig({ OTEL_LOGS_EXPORTER: 'otlp' })
    expect(named?.logs?.url.href).toBe('http://localhost:4318/v1/logs')
    expect(named?.traces).toBeUndefined()
  })

  it('decodes headers, the per-signal ones over the general ones', () => {
    const config = telemetryConfig({
      ...base,
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc%3D, x-tenant = one ,',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=two',
    })
    expect(config?.traces?.headers).toEqual({ authorization: 'Bearer abc=', 'x-tenant': 'two' })
    expect(config?.metrics?.headers).toEqual({ authorization: 'Bearer abc=', 'x-tenant': 'one' })
  })

  it('reads the protocols, timeouts, sampler, intervals and batch sizes', () => {
    const config = telemetryConfig({
      ...base,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
      OTEL_EXPORTER_OTLP_LOGS_TIMEOUT: '700',
      OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE: '/etc/otel/ca.pem',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_METRIC_EXPORT_INTERVAL: '15000',
      OTEL_METRIC_EXPORT_TIMEOUT: '1000',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_BLRP_MAX_QUEUE_SIZE: '7',
      OTEL_BLRP_MAX_EXPORT_BATCH_SIZE: '7',
      OTEL_SERVICE_NAME: 'tessera-eu',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=ignored,deployment.environment=prod',
    })
    expect(config?.traces?.protocol).toBe('http/json')
    expect(config?.metrics?.protocol).toBe('http/protobuf')
    expect(config?.traces?.timeoutMs).toBe(2500)
    expect(config?.logs?.timeoutMs).toBe(700)
    expect(config?.logs?.certificate).toEqual({
      file: '/etc/otel/ca.pem',
      variable: 'OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE',
    })
    expect(config?.traces?.certificate).toBeUndefined()
    expect(config?.metrics?.timeoutMs).toBe(1000)
    expect(config?.metrics?.intervalMs).toBe(15_000)
    expect(config?.traces?.sampling).toEqual({ root: 'ratio', ratio: 0.25, parentBased: true })
    expect(config?.traces?.batching).toEqual({
      maxQueueSize: 100,
      maxExportBatchSize: 10,
      scheduleDelayMs: 50,
      exportTimeoutMs: 30_000,
    })
    expect(config?.logs?.batching.maxQueueSize).toBe(7)
    expect(config?.serviceName).toBe('tessera-eu')
    expect([...(config?.resource ?? [])]).toEqual([
      ['service.name', 'ignored'],
      ['deployment.environment', 'prod'],
    ])
    const named = telemetryConfig({ ...base, OTEL_RESOURCE_ATTRIBUTES: 'service.name=edge' })
    expect(named?.serviceName).toBe('edge')
    for (const [sampler, root, parentBased] of [
      ['always_on', 'always_on', false],
      ['always_off', 'always_off', false],
      ['traceidratio', 'ratio', false],
      ['parentbased_always_off', 'always_off', true],
    ] as const) {
      const sampling = telemetryConfig({ ...base, OTEL_TRACES_SAMPLER: sampler })?.traces?.sampling
      expect(sampling).toEqual({ root, ratio: 1, parentBased })
    }
  })

  it('refuses a value it cannot use with one line naming the variable', () => {
    const cases: [Record<string, string>, string][] = [
      [
        { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
        'OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: Tessera sends OTLP over HTTP (http/protobuf or http/json)',
      ],
      [
        { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' },
        'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc is not supported: Tessera sends OTLP over HTTP (http/protobuf or http/json)',
      ],
      [
        { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/xml' },
        'OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json, not "http/xml"',
      ],
      [
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
        'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, not "collector:4318"',
      ],
      [
        { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'ftp://x' },
        'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT must be an http:// or https:// URL, not "ftp://x"',
      ],
      [
        { OTEL_EXPORTER_OTLP_HEADERS: 'api-key' },
        'OTEL_EXPORTER_OTLP_HEADERS must be a list of key=value, values percent-encoded',
      ],
      [
        { OTEL_EXPORTER_OTLP_HEADERS: 'api-key=%zz' },
        'OTEL_EXPORTER_OTLP_HEADERS must be a list of key=value, values percent-encoded',
      ],
      [
        { OTEL_EXPORTER_OTLP_LOGS_HEADERS: 'bad name=1' },
        'OTEL_EXPORTER_OTLP_LOGS_HEADERS must be a list of key=value, values percent-encoded',
      ],
      [
        { OTEL_EXPORTER_OTLP_HEADERS: 'x=a%0D%0Ay: z' },
        'OTEL_EXPORTER_OTLP_HEADERS must be a list of key=value, values percent-encoded',
      ],
      [
        { OTEL_EXPORTER_OTLP_TIMEOUT: '10s' },
        'OTEL_EXPORTER_OTLP_TIMEOUT must be a whole number of at least 1, not "10s"',
      ],
      [
        { OTEL_TRACES_SAMPLER: 'jaeger_remote' },
        'OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio, not "jaeger_remote"',
      ],
      [
        { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' },
        'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, not 1.5',
      ],
      [
        { OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '20' },
        'OTEL_BSP_MAX_EXPORT_BATCH_SIZE (20) must not exceed OTEL_BSP_MAX_QUEUE_SIZE (10)',
      ],
      [
        { OTEL_TRACES_EXPORTER: 'zipkin' },
        'OTEL_TRACES_EXPORTER=zipkin is not supported: otlp or none',
      ],
      [{ OTEL_SDK_DISABLED: 'yes' }, 'OTEL_SDK_DISABLED must be true or false, not "yes"'],
      [
        { OTEL_METRIC_EXPORT_INTERVAL: '0' },
        'OTEL_METRIC_EXPORT_INTERVAL must be a whole number of at least 1, not "0"',
      ],
    ]
    for (const [env, message] of cases) {
      const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? base : {}
      expect(() => telemetryConfig({ ...endpoint, ...env }), JSON.stringify(env)).toThrow(
        new Error(message),
      )
      expect(message).not.toContain('\n')
    }
  })

  it('never writes a header value into its error', () => {
    const secret = 'Bearer%20s3cr3t-value'
    let message = ''
    try {
      telemetryConfig({ ...base, OTEL_EXPORTER_OTLP_HEADERS: `authorization=${secret},broken` })
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toBe(
      'OTEL_EXPORTER_OTLP_HEADERS must be a list of key=value, values percent-encoded',
    )
  })

  it('lists every variable it reads', () => {
    expect(otelNames).toHaveLength(38)
    expect(new Set(otelNames).size).toBe(otelNames.length)
    expect(otelNames).toContain('OTEL_EXPORTER_OTLP_LOGS_HEADERS')
    expect(otelNames).toContain('OTEL_BLRP_MAX_QUEUE_SIZE')
  })
})
