import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  freePort,
  missingTools,
  podman,
  request,
  retrieveCode,
  root,
  run,
  tessera,
  until,
} from './podman.js'

/**
 * The image as docs/install.md runs it: one container on a named volume, with a port published
 * on 127.0.0.1, TLS by the instance's own self-signed certificate (kept in the volume).
 */

const skip = missingTools(['podman', 'runc', 'mmdebstrap'])
const image = process.env.TESSERA_IMAGE ?? 'localhost/tessera:local'
const id = `tessera-image-test-${process.pid}`
const volume = `${id}-data`
const containers: string[] = []

async function start(name: string, port: number) {
  containers.push(name)
  await podman(
    'run',
    '-d',
    '--name',
    name,
    '-v',
    `${volume}:/var/lib/tessera`,
    '-p',
    `127.0.0.1:${port}:8443`,
    '-e',
    `PUBLIC_URL=https://localhost:${port}`,
    image,
  )
  // The certificate the instance made on first start, from the volume.
  let ca = ''
  await until(`${name} serving`, 60, async () => {
    ca = (await podman('exec', name, 'cat', '/var/lib/tessera/tls/cert.pem')).stdout
    const answer = await request(port, 'GET', '/healthz', { ca, servername: 'localhost' })
    return answer.status === 200
  })
  return { ca, servername: 'localhost' }
}

const title = skip ? `the container image (skipped: ${skip})` : 'the container image'

describe.skipIf(skip !== undefined)(title, () => {
  beforeAll(async () => {
    const started = performance.now()
    const { stdout } = await run(`${root}/deploy/image.sh`, [], { IMAGE: image })
    console.log(
      `${stdout.trim().split('\n').at(-1)} (deploy/image.sh: ${((performance.now() - started) / 1000).toFixed(0)} s)`,
    )
    await podman('volume', 'create', volume)
  }, 1_200_000)

  afterAll(async () => {
    for (const name of containers) await podman('rm', '-f', '-t', '0', name).catch(() => {})
    await podman('volume', 'rm', '-f', volume).catch(() => {})
  })

  it('holds only the runtime: no npm, no compiler, no dev dependencies, not root', async () => {
    const { stdout } = await podman(
      'run',
      '--rm',
      '--entrypoint',
      'sh',
      image,
      '-c',
      'id -u; command -v tessera; for x in npm npx g++ make python3 curl; do command -v $x || echo no-$x; done; ls node_modules/typescript node_modules/vitest node_modules/better-sqlite3/deps 2>&1 | grep -c "No such file"',
    )
    expect(stdout.trim().split('\n')).toEqual([
      '10001',
      '/usr/local/bin/tessera',
      'no-npm',
      'no-npx',
      'no-g++',
      'no-make',
      'no-python3',
      'no-curl',
      '3',
    ])
    const size = Number((await podman('image', 'inspect', '--format', '{{.Size}}', image)).stdout)
    console.log(`image ${image}: ${(size / 1e6).toFixed(0)} MB uncompressed`)
  })

  it('serves tokens made with `podman exec … tessera`, exits 0 within 10 s of SIGTERM, and keeps them in its volume', async () => {
    const port = await freePort()
    const first = `${id}-1`
    const tls = await start(first, port)

    await tessera(first, 'account', 'create', 'acme')
    const { token } = await tessera(
      first,
      'token',
      'create',
      'acme',
      '--scopes',
      'styles:read',
      '--note',
      'image',
    )
    expect(await retrieveCode(port, tls, token)).toBe('TokenValid')
    // The API reference and its assets (read from the package directory at run time).
    const page = await request(port, 'GET', '/docs', tls)
    expect(page.status).toBe(200)
    const assets = [...page.body.matchAll(/\/docs\/assets\/[\w.-]+/g)].map((m) => m[0])
    expect(assets).toHaveLength(4)
    for (const asset of assets) expect((await request(port, 'GET', asset, tls)).status).toBe(200)

    // The image's HEALTHCHECK, run on demand (podman runs it on a timer only under systemd).
    await podman('healthcheck', 'run', first)

    const signalled = performance.now()
    await podman('stop', '-t', '30', first) // SIGTERM; SIGKILL only after 30 s
    const seconds = (performance.now() - signalled) / 1000
    const state = await podman(
      'inspect',
      '--format',
      '{{.State.Running}} {{.State.ExitCode}}',
      first,
    )
    console.log(
      `SIGTERM to the container: gone after ${seconds.toFixed(2)} s, ${state.stdout.trim()}`,
    )
    expect(state.stdout.trim()).toBe('false 0')
    expect(seconds).toBeLessThan(10)

    const second = `${id}-2`
    const again = await start(second, port)
    expect(again.ca).toBe(tls.ca)
    expect(await retrieveCode(port, again, token)).toBe('TokenValid')
  })
})
