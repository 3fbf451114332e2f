'use strict';
// Minimal reader/writer for numpy's .npy and .npz files, for scripts that
// hand tensors to ONNX Runtime. Reads stored or deflated zip members
// (including the zip64 records numpy writes with force_zip64); writes stored
// (uncompressed) members. Arrays are {dtype, shape, data} where data is a
// typed array and dtype a numpy descr without byte order ('f4', 'i8', ...).

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

// numpy descr (without byte-order character) -> typed array constructor.
const DTYPES = {
  f4: Float32Array,
  f8: Float64Array,
  i1: Int8Array,
  i2: Int16Array,
  i4: Int32Array,
  i8: BigInt64Array,
  u1: Uint8Array,
  u2: Uint16Array,
  u4: Uint32Array,
  u8: BigUint64Array,
  b1: Uint8Array,
};

// ONNX Runtime tensor type <-> numpy descr.
const ORT_TO_DESCR = {
  float32: 'f4',
  float64: 'f8',
  int8: 'i1',
  int16: 'i2',
  int32: 'i4',
  int64: 'i8',
  uint8: 'u1',
  uint16: 'u2',
  uint32: 'u4',
  uint64: 'u8',
  bool: 'b1',
};
const DESCR_TO_ORT = Object.fromEntries(
  Object.entries(ORT_TO_DESCR).map(([k, v]) => [v, k]));

const NPY_MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY

// Zip record signatures and sizes (PKWARE APPNOTE 4.3.7, 4.3.12, 4.3.16).
const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_EOCD64 = 0x06064b50;
const SIG_EOCD64_LOCATOR = 0x07064b50;
const LOCAL_HEADER_SIZE = 30;
const CENTRAL_HEADER_SIZE = 46;
const EOCD_SIZE = 22;
const EOCD64_LOCATOR_SIZE = 20;
const MAX_COMMENT = 0xffff;
const ZIP64_EXTRA_ID = 0x0001;
const METHOD_STORED = 0;
const METHOD_DEFLATE = 8;
const U32_MAX = 0xffffffff;
const U16_MAX = 0xffff;

class NpzError extends Error {}

let crcTable = null;
function crc32(buf) {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = crcTable[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/// Parses one .npy image into {dtype, shape, data}.
function parseNpy(buf, what) {
  if (buf.length < 10 || !buf.subarray(0, 6).equals(NPY_MAGIC))
    throw new NpzError(`${what}: not an .npy array (bad magic)`);
  const major = buf[6];
  let headerLen, offset;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    offset = 10;
  } else if (major === 2 || major === 3) {
    headerLen = buf.readUInt32LE(8);
    offset = 12;
  } else {
    throw new NpzError(`${what}: unsupported .npy version ${major}`);
  }
  const header = buf.toString('latin1', offset, offset + headerLen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape)
    throw new NpzError(`${what}: malformed .npy header: ${header.trim()}`);
  if (fortran[1] === 'True')
    throw new NpzError(`${what}: fortran-order arrays are not supported`);
  const d = descr[1];
  const order = d[0];
  const kind = d.slice(1);
  if (!DTYPES[kind] || order === '>')
    throw new NpzError(`${what}: unsupported dtype '${d}'`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s.length)
    .map(s => Number(s));
  const count = dims.reduce((a, b) => a * b, 1);
  const Ctor = DTYPES[kind];
  const start = offset + headerLen;
  const bytes = count * Ctor.BYTES_PER_ELEMENT;
  if (start + bytes > buf.length)
    throw new NpzError(`${what}: data truncated (${buf.length - start} of ${bytes} bytes)`);
  // Copy so that the typed array is aligned and owns its memory.
  const copy = new Uint8Array(bytes);
  copy.set(buf.subarray(start, start + bytes));
  return {dtype: kind, shape: dims, data: new Ctor(copy.buffer)};
}

/// Serialises {dtype, shape, data} into an .npy (version 1.0) image.
function formatNpy(arr) {
  const kind = arr.dtype;
  if (!DTYPES[kind]) throw new NpzError(`cannot write dtype '${kind}'`);
  const order = kind === 'u1' || kind === 'i1' || kind === 'b1' ? '|' : '<';
  const shapeStr = arr.shape.length === 1 ? `(${arr.shape[0]},)`
                                          : `(${arr.shape.join(', ')})`;
  let header = `{'descr': '${order}${kind}', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  // The data starts at a multiple of 64 bytes; the header ends with '\n'.
  const alignment = 64;
  const prefix = 10;
  const total = Math.ceil((prefix + header.length + 1) / alignment) * alignment;
  header = header + ' '.repeat(total - prefix - header.length - 1) + '\n';
  const head = Buffer.alloc(prefix);
  NPY_MAGIC.copy(head, 0);
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.from(arr.data.buffer, arr.data.byteOffset, arr.data.byteLength);
  return Buffer.concat([head, Buffer.from(header, 'latin1'), data]);
}

function readZip64Extra(extra, fields) {
  // fields: the header values that are 0xFFFFFFFF, in the order
  // uncompressed size, compressed size, local header offset.
  let p = 0;
  while (p + 4 <= extra.length) {
    const id = extra.readUInt16LE(p);
    const size = extra.readUInt16LE(p + 2);
    if (id === ZIP64_EXTRA_ID) {
      let q = p + 4;
      const out = {};
      for (const f of fields) {
        out[f] = Number(extra.readBigUInt64LE(q));
        q += 8;
      }
      return out;
    }
    p += 4 + size;
  }
  return {};
}

/// Reads an .npz file into a Map name -> array, in file order.
function readNpz(file) {
  const buf = fs.readFileSync(file);
  const what = path.basename(file);
  const minScan = Math.max(0, buf.length - EOCD_SIZE - MAX_COMMENT);
  let eocd = -1;
  for (let p = buf.length - EOCD_SIZE; p >= minScan; p--) {
    if (buf.readUInt32LE(p) === SIG_EOCD) {
      eocd = p;
      break;
    }
  }
  if (eocd < 0) throw new NpzError(`${what}: not a zip file (no end of central directory)`);
  let count = buf.readUInt16LE(eocd + 10);
  let cdOffset = buf.readUInt32LE(eocd + 16);
  const locator = eocd - EOCD64_LOCATOR_SIZE;
  if ((count === U16_MAX || cdOffset === U32_MAX) && locator >= 0 &&
      buf.readUInt32LE(locator) === SIG_EOCD64_LOCATOR) {
    const e64 = Number(buf.readBigUInt64LE(locator + 8));
    if (buf.readUInt32LE(e64) !== SIG_EOCD64)
      throw new NpzError(`${what}: bad zip64 end of central directory`);
    count = Number(buf.readBigUInt64LE(e64 + 32));
    cdOffset = Number(buf.readBigUInt64LE(e64 + 48));
  }
  const arrays = new Map();
  let p = cdOffset;
  for (let i = 0; i < count; i++) {
    if (p + CENTRAL_HEADER_SIZE > buf.length || buf.readUInt32LE(p) !== SIG_CENTRAL)
      throw new NpzError(`${what}: bad central directory entry ${i}`);
    const method = buf.readUInt16LE(p + 10);
    const crc = buf.readUInt32LE(p + 16);
    let csize = buf.readUInt32LE(p + 20);
    let usize = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    let local = buf.readUInt32LE(p + 42);
    const name = buf.toString('utf8', p + CENTRAL_HEADER_SIZE, p + CENTRAL_HEADER_SIZE + nameLen);
    const extra = buf.subarray(p + CENTRAL_HEADER_SIZE + nameLen,
                               p + CENTRAL_HEADER_SIZE + nameLen + extraLen);
    const fields = [];
    if (usize === U32_MAX) fields.push('usize');
    if (csize === U32_MAX) fields.push('csize');
    if (local === U32_MAX) fields.push('local');
    if (fields.length) {
      const z = readZip64Extra(extra, fields);
      if (z.usize !== undefined) usize = z.usize;
      if (z.csize !== undefined) csize = z.csize;
      if (z.local !== undefined) local = z.local;
    }
    p += CENTRAL_HEADER_SIZE + nameLen + extraLen + commentLen;

    if (buf.readUInt32LE(local) !== SIG_LOCAL)
      throw new NpzError(`${what}: bad local header for '${name}'`);
    const start = local + LOCAL_HEADER_SIZE + buf.readUInt16LE(local + 26) +
                  buf.readUInt16LE(local + 28);
    if (start + csize > buf.length)
      throw new NpzError(`${what}: member '${name}' is truncated`);
    const raw = buf.subarray(start, start + csize);
    let data;
    if (method === METHOD_STORED) data = raw;
    else if (method === METHOD_DEFLATE) data = zlib.inflateRawSync(raw);
    else throw new NpzError(`${what}: member '${name}' uses unsupported compression ${method}`);
    if (data.length !== usize || crc32(data) !== crc)
      throw new NpzError(`${what}: member '${name}' fails its size/CRC check`);
    const key = name.endsWith('.npy') ? name.slice(0, -4) : name;
    arrays.set(key, parseNpy(data, `${what}:${name}`));
  }
  return arrays;
}

/// Writes a Map (or object) name -> array as an uncompressed .npz. Writes a
/// temporary file beside the target and renames it, so a failed run never
/// leaves a half-written file.
function writeNpz(file, arrays) {
  const entries = arrays instanceof Map ? [...arrays] : Object.entries(arrays);
  const locals = [];
  const centrals = [];
  let offset = 0;
  // DOS date 1980-01-01 00:00: a fixed timestamp keeps outputs reproducible.
  const dosDate = (1 << 5) | 1;
  const versionNeeded = 20;
  for (const [key, arr] of entries) {
    const name = Buffer.from(`${key}.npy`, 'utf8');
    const data = formatNpy(arr);
    if (data.length >= U32_MAX || offset >= U32_MAX)
      throw new NpzError(`'${key}': arrays over 4 GiB are not supported`);
    const crc = crc32(data);
    const lh = Buffer.alloc(LOCAL_HEADER_SIZE);
    lh.writeUInt32LE(SIG_LOCAL, 0);
    lh.writeUInt16LE(versionNeeded, 4);
    lh.writeUInt16LE(0, 6);
    lh.writeUInt16LE(METHOD_STORED, 8);
    lh.writeUInt16LE(0, 10);
    lh.writeUInt16LE(dosDate, 12);
    lh.writeUInt32LE(crc, 14);
    lh.writeUInt32LE(data.length, 18);
    lh.writeUInt32LE(data.length, 22);
    lh.writeUInt16LE(name.length, 26);
    lh.writeUInt16LE(0, 28);
    const ch = Buffer.alloc(CENTRAL_HEADER_SIZE);
    ch.writeUInt32LE(SIG_CENTRAL, 0);
    ch.writeUInt16LE(versionNeeded, 4);
    ch.writeUInt16LE(versionNeeded, 6);
    ch.writeUInt16LE(0, 8);
    ch.writeUInt16LE(METHOD_STORED, 10);
    ch.writeUInt16LE(0, 12);
    ch.writeUInt16LE(dosDate, 14);
    ch.writeUInt32LE(crc, 16);
    ch.writeUInt32LE(data.length, 20);
    ch.writeUInt32LE(data.length, 24);
    ch.writeUInt16LE(name.length, 28);
    ch.writeUInt32LE(offset, 42);
    locals.push(lh, name, data);
    centrals.push(ch, name);
    offset += lh.length + name.length + data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(EOCD_SIZE);
  end.writeUInt32LE(SIG_EOCD, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  const tmp = path.join(path.dirname(path.resolve(file)),
                        `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    fs.writeFileSync(tmp, Buffer.concat([...locals, cd, end]));
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, {force: true});
    throw e;
  }
}

module.exports = {
  readNpz, writeNpz, parseNpy, formatNpy, crc32, NpzError, DTYPES, ORT_TO_DESCR,
  DESCR_TO_ORT,
};
