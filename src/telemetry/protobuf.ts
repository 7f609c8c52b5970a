const nibble = (c: number) => (c <= 57 ? c - 48 : (c | 32) - 87)

function ascii(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return false
  return true
}

/**
 * The few protobuf wire encodings OTLP needs, written into one growing buffer: varints (lengths,
 * enums, int64), fixed64 (times, counts), fixed32 (span flags), doubles, and length-delimited
 * strings, bytes, packed lists and nested messages.
 */
export class ProtoWriter {
  private buf = Buffer.allocUnsafe(16_384)
  private pos = 0

  private room(n: number) {
    if (this.pos + n <= this.buf.length) return
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n))
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }

  /** An unsigned varint below 2^53, or any int64 as a bigint (negatives in ten bytes). */
  varint(value: number | bigint): this {
    if (typeof value === 'bigint' || value < 0 || value > Number.MAX_SAFE_INTEGER) {
      let v = BigInt.asUintN(64, BigInt(value))
      this.room(10)
      while (v > 0x7fn) {
        this.buf[this.pos++] = Number(v & 0x7fn) | 0x80
        v >>= 7n
      }
      this.buf[this.pos++] = Number(v)
      return this
    }
    this.room(8)
    const buf = this.buf
    let v = value
    while (v > 0x7f) {
      buf[this.pos++] = (v % 128) | 0x80
      v = Math.floor(v / 128)
    }
    buf[this.pos++] = v
    return this
  }

  tag(field: number, wireType: 0 | 1 | 2 | 5): this {
    // Fields 1 to 15 (all but a span's flags): a tag of one byte.
    if (field < 16) {
      this.room(1)
      this.buf[this.pos++] = field * 8 + wireType
      return this
    }
    return this.varint(field * 8 + wireType)
  }

  /** Counts given as numbers are whole and finite (what is not is written as its rounding, or 0). */
  fixed64(value: number | bigint): this {
    const big =
      typeof value === 'bigint' ? value : BigInt(Number.isFinite(value) ? Math.round(value) : 0)
    this.room(8)
    this.pos = this.buf.writeBigUInt64LE(BigInt.asUintN(64, big), this.pos)
    return this
  }

  fixed32(value: number): this {
    this.room(4)
    this.pos = this.buf.writeUInt32LE(value >>> 0, this.pos)
    return this
  }

  double(value: number): this {
    this.room(8)
    this.pos = this.buf.writeDoubleLE(value, this.pos)
    return this
  }

  /** A length-delimited field's length and bytes (the tag is the caller's). */
  bytes(value: Uint8Array): this {
    this.varint(value.length)
    this.room(value.length)
    this.buf.set(value, this.pos)
    this.pos += value.length
    return this
  }

  /** Bytes given as hex digits (a trace or span id), without a Buffer made for them. */
  hex(value: string): this {
    const n = value.length >>> 1
    this.varint(n)
    this.room(n)
    // Locals, not fields, in the loops: V8 keeps them in registers.
    const buf = this.buf
    let pos = this.pos
    for (let i = 0; i < 2 * n; i += 2) {
      buf[pos++] = (nibble(value.charCodeAt(i)) << 4) | nibble(value.charCodeAt(i + 1))
    }
    this.pos = pos
    return this
  }

  string(value: string): this {
    // Short ASCII (attribute keys, routes, ids: most strings sent) copied a character a byte: a
    // native call to encode UTF-8 costs more than such a string.
    const n = value.length
    if (n < 128 && ascii(value)) {
      this.room(n + 1)
      const buf = this.buf
      let pos = this.pos
      buf[pos++] = n
      for (let i = 0; i < n; i++) buf[pos++] = value.charCodeAt(i)
      this.pos = pos
      return this
    }
    const length = Buffer.byteLength(value)
    this.varint(length)
    this.room(length)
    this.pos += this.buf.write(value, this.pos)
    return this
  }

  /** A nested message (or packed list): written here, then its length put in front of it. */
  nested(write: (w: this) => void): this {
    const start = this.open()
    write(this)
    return this.close(start)
  }

  /**
   * Opens a nested message (what `nested` does, without a closure: for the hot loops); its
   * writes follow, then `close` with what this returned.
   */
  open(): number {
    // The length takes at most 5 bytes for a message under 4 GiB: reserve 1 and move the body
    // once if it needs more (a body of 128 bytes or more, one copy of it).
    this.room(1)
    return ++this.pos
  }

  close(start: number): this {
    const length = this.pos - start
    let size = 1
    while (length >= 128 ** size) size++
    if (size > 1) {
      this.room(size - 1)
      this.buf.copy(this.buf, start + size - 1, start, this.pos)
      this.pos += size - 1
    }
    let at = start - 1
    let v = length
    while (v > 0x7f) {
      this.buf[at++] = (v % 128) | 0x80
      v = Math.floor(v / 128)
    }
    this.buf[at] = v
    return this
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.pos)
  }
}
