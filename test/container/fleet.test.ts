import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  freePort,
  missingTools,
  podman,
  request,
  retrieveCode,
  root,
  run,
  until,
} from './podman.js'

/**
 * compose.yaml's fleet (PostgreSQL, Redis, a migration, two instances, Caddy terminating TLS)
 * brought up with `deploy/fleet.sh up`: a token made through one instance is valid through the
 * other and through the round-robin route, and once deleted it is revoked on the other within
 * the contract's second.
 */

// Containers find each other by name through CNI's dnsname plugin (podman 4 with CNI).
const skip = missingTools(['podman', 'runc', 'mmdebstrap', 'podman-compose'], {
  '/usr/lib/cni/dnsname': 'golang-github-containernetworking-plugin-dnsname',
})
const fleet = `${root}/deploy/fleet.sh`
const ports = { both: 0, one: 0, two: 0 }
let env: NodeJS.ProcessEnv = {}
let up = false

const exec = async (service: string, ...args: string[]) =>
  JSON.parse((await run(fleet, ['exec', service, ...args], env)).stdout)

const title = skip ? `the compose fleet (skipped: ${skip})` : 'the compose fleet'

describe.skipIf(skip !== undefined)(title, () => {
  let tls = { ca: '', servername: 'localhost' }

  beforeAll(async () => {
    ports.both = await freePort()
    ports.one = await freePort()
    ports.two = await freePort()
    env = {
      COMPOSE_PROJECT_NAME: 'tessera-test',
      TESSERA_PORT: String(ports.both),
      TESSERA_1_PORT: String(ports.one),
      TESSERA_2_PORT: String(ports.two),
      PUBLIC_URL: `https://localhost:${ports.both}`,
    }
    await run(fleet, ['down', '-v'], env).catch(() => {})
    const started = performance.now()
    up = true // whatever `up` leaves behind if it fails, afterAll takes down
    const { stdout } = await run(fleet, ['up'], env)
    console.log(
      `${stdout.trim()} (deploy/fleet.sh up: ${((performance.now() - started) / 1000).toFixed(0)} s)`,
    )
    // Caddy's local authority, from its volume: the proxy's certificate must verify against it.
    const { stdout: ca } = await run(
      fleet,
      ['exec', 'proxy', 'cat', '/data/caddy/pki/authorities/local/root.crt'],
      env,
    )
    tls = { ca, servername: 'localhost' }
  }, 1_200_000)

  afterAll(async () => {
    if (up) await run(fleet, ['down', '-v'], env).catch(() => {})
  })

  it('revokes on one instance a token deleted through the other within 1 s', async () => {
    // Once, on a cold machine right after the images were built, a command exec'd into an
    // instance found PostgreSQL's port silent for its 3 s connect timeout, twice, though both
    // instances were healthy: a harmless command (migrate, idempotent) is retried first.
    const reached = performance.now()
    await until('tessera migrate in tessera-1', 60, async () => {
      await run(fleet, ['exec', 'tessera-1', 'tessera', 'migrate'], env)
      return true
    })
    console.log(
      `tessera-1's CLI reached PostgreSQL in ${Math.round(performance.now() - reached)} ms`,
    )
    await exec('tessera-1', 'tessera', 'account', 'create', 'fleet')
    const { token: sk } = await exec(
      'tessera-1',
      ...['tessera', 'token', 'create', 'fleet', '--scopes', 'tokens:read,tokens:write'],
    )

    const created = await request(ports.one, 'POST', `/tokens/v2/fleet?access_token=${sk}`, tls, {
      note: 'made through tessera-1',
    })
    expect(created).toMatchObject({ status: 200 })
    const { token, id } = JSON.parse(created.body) as { token: string; id: string }

    expect(await retrieveCode(ports.two, tls, token)).toBe('TokenValid')
    for (let i = 0; i < 4; i++)
      expect(await retrieveCode(ports.both, tls, token)).toBe('TokenValid')

    const deleted = await request(
      ports.one,
      'DELETE',
      `/tokens/v2/fleet/${id}?access_token=${sk}`,
      tls,
    )
    expect(deleted).toMatchObject({ status: 204 })
    const at = performance.now()
    let code: string | undefined
    while (performance.now() - at < 1000) {
      code = await retrieveCode(ports.two, tls, token)
      if (code === 'TokenRevoked') break
    }
    const ms = performance.now() - at
    console.log(`deleted through tessera-1, ${code} through tessera-2 after ${ms.toFixed(0)} ms`)
    expect(code).toBe('TokenRevoked')
    expect(await retrieveCode(ports.both, tls, token)).toBe('TokenRevoked')
  })

  it("publishes only the proxy's ports, on 127.0.0.1", async () => {
    const names = await podman(
      ...[
        'ps',
        '--filter',
        'label=io.podman.compose.project=tessera-test',
        '--format',
        '{{.Names}}',
      ],
    )
    const published: string[] = []
    for (const name of names.stdout.trim().split('\n')) {
      const { stdout } = await podman('port', name)
      published.push(...[...stdout.matchAll(/-> ([0-9.:]+)/g)].map((m) => m[1] ?? ''))
    }
    expect(published.sort()).toEqual(
      [ports.both, ports.one, ports.two].map((p) => `127.0.0.1:${p}`).sort(),
    )
    await until('the round-robin route ready', 10, async () => {
      const answer = await request(ports.both, 'GET', '/readyz', tls)
      return answer.status === 200
    })
  })

  it('stops cleanly: every instance exits 0 on SIGTERM', async () => {
    const { stdout } = await run(fleet, ['down', '-v'], env)
    up = false
    console.log(stdout.trim())
    expect(stdout).toMatch(/^tessera-1: exited 0$/m)
    expect(stdout).toMatch(/^tessera-2: exited 0$/m)
    expect(stdout).toMatch(/^postgres: exited 0$/m)
  })
})
