import { encode } from './codec.js'
import type { Destination, Signal } from './config.js'
import type { Origin } from './resource.js'
import { logsRequest, metricsRequest, type Schema, traceRequest } from './schema.js'
import { Transport } from './transport.js'

const requests: Record<Signal, { schema: Schema; resource: string; scope: string; items: string }> =
  {
    traces: {
      schema: traceRequest,
      resource: 'resourceSpans',
      scope: 'scopeSpans',
      items: 'spans',
    },
    metrics: {
      schema: metricsRequest,
      resource: 'resourceMetrics',
      scope: 'scopeMetrics',
      items: 'metrics',
    },
    logs: {
      schema: logsRequest,
      resource: 'resourceLogs',
      scope: 'scopeLogs',
      items: 'logRecords',
    },
  }

/**
 * One signal's export requests to its endpoint: items (spans, metrics, log records, in their
 * OTLP shape) wrapped in the Resource and scope, encoded in the configured protocol, posted.
 */
export class SignalExporter {
  private readonly transport: Transport
  private readonly timeoutMs: number

  constructor(
    private readonly signal: Signal,
    private readonly to: Destination,
    private readonly origin: Origin,
    /** The batch processor's export timeout: the shorter of it and the destination's holds. */
    exportTimeoutMs = to.timeoutMs,
  ) {
    this.transport = new Transport(to, `tessera/${origin.scope.version}`)
    this.timeoutMs = Math.min(exportTimeoutMs, to.timeoutMs)
  }

  /** Resolves once the receiver took them; rejects (an ExportError) otherwise. */
  async export(items: readonly object[]): Promise<void> {
    const { schema, resource, scope, items: name } = requests[this.signal]
    const { resource: r, scope: s } = this.origin
    const request = { [resource]: [{ resource: r, [scope]: [{ scope: s, [name]: items }] }] }
    const { body, contentType } = encode(this.to.protocol, schema, request)
    await this.transport.post(body, contentType, this.timeoutMs)
  }

  close(): void {
    this.transport.close()
  }
}
