import net from 'node:net'

export interface TcpProxy {
  port: number
  /** Drops every connection; new ones are refused, or with `blackhole` accepted and ignored. */
  cut(mode?: 'refuse' | 'blackhole'): Promise<void>
  restore(): Promise<void>
  close(): Promise<void>
}

/** A loopback TCP proxy to `targetPort` that a test can cut and restore. */
export async function tcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>()
  let mode: 'pass' | 'blackhole' = 'pass'
  const track = (s: net.Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => s.destroy())
  }
  const server = net.createServer((client) => {
    track(client)
    if (mode === 'blackhole') return
    const upstream = net.connect(targetPort, '127.0.0.1')
    track(upstream)
    client.pipe(upstream).pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject)
        resolve((server.address() as net.AddressInfo).port)
      })
    })
  const port = await listen(0)
  const dropAll = () => {
    for (const s of sockets) s.destroy()
  }
  return {
    port,
    async cut(how = 'refuse') {
      dropAll()
      if (how === 'blackhole') {
        mode = 'blackhole'
      } else {
        await new Promise<void>((resolve) => server.close(() => resolve()))
        dropAll()
      }
    },
    async restore() {
      mode = 'pass'
      if (!server.listening) await listen(port)
    },
    async close() {
      dropAll()
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
