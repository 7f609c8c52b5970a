import { execFile } from 'node:child_process'
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

/**
 * `npm run image` (deploy/image.sh) on a machine as a newcomer has it: podman and no mmdebstrap.
 * The script's choice of bases is what is tested; podman is a stand-in that records what it is
 * asked (no registry is reachable here, so the public build itself cannot run).
 */

const root = path.resolve(import.meta.dirname, '../..')
const exec = promisify(execFile)

/** A PATH holding only the tools the script needs (so no mmdebstrap), and optionally podman. */
function machine(withPodman: boolean) {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-image-script-'))
  const bin = path.join(dir, 'bin')
  mkdirSync(bin)
  for (const tool of ['bash', 'dirname', 'mkdir', 'mktemp', 'rm', 'cat', 'mv', 'awk', 'env']) {
    symlinkSync(`/usr/bin/${tool}`, path.join(bin, tool))
  }
  const calls = path.join(dir, 'calls')
  if (withPodman) {
    // `image exists` answers no (a store without local bases); `image inspect` a size.
    const podman = `#!/usr/bin/bash
echo "$*" >> ${calls}
case "$*" in
  *"image exists"*) exit 1 ;;
  *"image inspect"*) echo 237000000 ;;
esac
`
    writeFileSync(path.join(bin, 'podman'), podman)
    chmodSync(path.join(bin, 'podman'), 0o755)
  }
  return { dir, bin, calls }
}

async function image(m: ReturnType<typeof machine>, env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await exec('/usr/bin/bash', [path.join(root, 'deploy/image.sh')], {
      env: { PATH: m.bin, HOME: m.dir, TESSERA_PODMAN_DIR: path.join(m.dir, 'podman'), ...env },
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

describe('npm run image without mmdebstrap', () => {
  it('builds on the public images, saying so and how to get the local bases', async () => {
    const m = machine(true)
    const res = await image(m)
    expect(res).toEqual({
      code: 0,
      stdout:
        "mmdebstrap is missing: building on the public images (docker.io's node:24-bookworm-slim and debian:bookworm-slim).\n" +
        "  Where no registry is reachable, apt-get install -y mmdebstrap and run again for bases made from Debian's packages.\n" +
        'built tessera:local in 0 s: 237 MB uncompressed\n',
      stderr: '',
    })
    const calls = readFileSync(m.calls, 'utf8').trim().split('\n')
    expect(calls.at(-2)).toBe(
      `--runtime runc build --format docker --layers -f ${root}/Containerfile -t tessera:local ${root}`,
    )
    expect(calls.at(-1)).toBe('--runtime runc image inspect --format {{.Size}} tessera:local')
  })

  it('TESSERA_BASE=public builds on the public images without a word about mmdebstrap', async () => {
    const m = machine(true)
    const res = await image(m, { TESSERA_BASE: 'public' })
    expect(res.code).toBe(0)
    expect(res.stdout).toBe('built tessera:local in 0 s: 237 MB uncompressed\n')
  })

  it('TESSERA_BASE=local says what is missing, in one line, and builds nothing', async () => {
    const m = machine(true)
    // npm is there (base.sh fetches Node with it); only mmdebstrap is not.
    writeFileSync(path.join(m.bin, 'npm'), '#!/usr/bin/bash\nexit 0\n')
    chmodSync(path.join(m.bin, 'npm'), 0o755)
    const res = await image(m, { TESSERA_BASE: 'local' })
    expect(res.code).toBe(1)
    expect(res.stderr).toBe('base.sh: mmdebstrap is missing (apt-get install -y mmdebstrap)\n')
    expect(readFileSync(m.calls, 'utf8')).toBe(
      '--runtime runc image exists localhost/tessera-base/debian:bookworm\n',
    )
  })

  it('names the docker command where podman is missing', async () => {
    const res = await image(machine(false))
    expect(res).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'image.sh: podman is missing (apt-get install -y podman runc); with docker instead:\n' +
        '  docker build -f Containerfile -t tessera:local .\n',
    })
  })

  it('refuses a TESSERA_BASE it does not know', async () => {
    const res = await image(machine(true), { TESSERA_BASE: 'bookworm' })
    expect(res).toEqual({
      code: 2,
      stdout: '',
      stderr: "image.sh: TESSERA_BASE is local or public, not 'bookworm'\n",
    })
  })
})
