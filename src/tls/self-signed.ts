import { generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  existsSync,
  fchmodSync,
  mkdirSync,
  openSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import path from 'node:path'

/**
 * A self-signed ECDSA P-256 certificate for localhost and 127.0.0.1, DER-encoded by hand:
 * Node can sign but not issue certificates, and this is all the X.509 the first start needs.
 */

const der = (tag: number, ...parts: Buffer[]): Buffer => {
  const body = Buffer.concat(parts)
  const n = body.length
  let len: Buffer
  if (n < 0x80) len = Buffer.from([n])
  else if (n < 0x100) len = Buffer.from([0x81, n])
  else len = Buffer.from([0x82, n >> 8, n & 0xff])
  return Buffer.concat([Buffer.from([tag]), len, body])
}
const seq = (...p: Buffer[]) => der(0x30, ...p)
const oid = (dotted: string) => {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number)
  const bytes = [40 * a + b]
  for (const arc of rest) {
    const chunk = [arc & 0x7f]
    for (let v = arc >> 7; v > 0; v >>= 7) chunk.unshift((v & 0x7f) | 0x80)
    bytes.push(...chunk)
  }
  return der(0x06, Buffer.from(bytes))
}
const utcTime = (d: Date) =>
  der(0x17, Buffer.from(`${d.toISOString().slice(2, 19).replace(/[-T:]/g, '')}Z`))
const name = (cn: string) => seq(der(0x31, seq(oid('2.5.4.3'), der(0x0c, Buffer.from(cn)))))

const ecdsaWithSha256 = seq(oid('1.2.840.10045.4.3.2'))

export function generateSelfSigned(
  now = new Date(),
  random = randomBytes(16),
): { cert: string; key: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  // A DER INTEGER is minimal and positive: a first byte of 0x00 followed by one below 0x80 is
  // "illegal padding" to OpenSSL (1 start in 256 failed before), so the top bits are fixed at 01.
  const serial = Buffer.from(random)
  serial[0] = ((serial[0] ?? 0) & 0x3f) | 0x40
  const notBefore = new Date(now.getTime() - 86_400_000)
  const notAfter = new Date(now.getTime() + 825 * 86_400_000)
  const san = seq(der(0x82, Buffer.from('localhost')), der(0x87, Buffer.from([127, 0, 0, 1])))
  const extensions = der(
    0xa3,
    seq(
      seq(
        oid('2.5.29.19'),
        der(0x01, Buffer.from([0xff])),
        der(0x04, seq(der(0x01, Buffer.from([0xff])))),
      ),
      seq(oid('2.5.29.17'), der(0x04, san)),
    ),
  )
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))),
    der(0x02, serial),
    ecdsaWithSha256,
    name('localhost'),
    seq(utcTime(notBefore), utcTime(notAfter)),
    name('localhost'),
    publicKey.export({ type: 'spki', format: 'der' }),
    extensions,
  )
  const signature = sign('sha256', tbs, { key: privateKey, dsaEncoding: 'der' })
  const certDer = seq(tbs, ecdsaWithSha256, der(0x03, Buffer.from([0]), signature))
  const b64 = certDer.toString('base64').replace(/.{64}/g, '$&\n')
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${b64.trimEnd()}\n-----END CERTIFICATE-----\n`,
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  }
}

/** Writes a file only its owner may open; the mode is set before the first byte is written. */
function writePrivate(file: string, text: string) {
  const fd = openSync(file, 'w', 0o600)
  try {
    fchmodSync(fd, 0o600)
    writeFileSync(fd, text)
  } finally {
    closeSync(fd)
  }
}

/**
 * The certificate in `dataDir/tls`, generated on first use. DATA_DIR (when this creates it)
 * and `tls` are 0700, both files 0600: nothing Tessera keeps in DATA_DIR is open to others.
 */
export function ensureSelfSigned(dataDir: string): {
  certFile: string
  keyFile: string
  created: boolean
} {
  const dir = path.join(dataDir, 'tls')
  const certFile = path.join(dir, 'cert.pem')
  const keyFile = path.join(dir, 'key.pem')
  // Every directory this creates (DATA_DIR too, on a first start) gets the mode.
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  // The directory is Tessera's own: one made by an older version (0755) is tightened.
  if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700)
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile, created: false }
  const { cert, key } = generateSelfSigned()
  writePrivate(keyFile, key)
  writePrivate(certFile, cert)
  return { certFile, keyFile, created: true }
}
