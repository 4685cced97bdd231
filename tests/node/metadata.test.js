'use strict';
// End-to-end: the Node.js cassandra-driver (pinned in package.json) against a real ringdb process.
// Run from the repo root: RINGDB_BIN=target/debug/ringdb node --test tests/node/
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const cassandra = require('cassandra-driver');

const { dataTypes } = cassandra.types;
const REPO = path.resolve(__dirname, '..', '..');
const BIN = path.resolve(REPO, process.env.RINGDB_BIN || 'target/debug/ringdb');

let server; // { proc, port, dir, log, exited }
let client;

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// One raw OPTIONS v4 request; resolves true when a SUPPORTED (opcode 0x06) header comes back.
function optionsHandshake(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    const done = (ok) => { sock.destroy(); resolve(ok); };
    sock.setTimeout(2000, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => sock.write(Buffer.from([0x04, 0, 0, 0, 0x05, 0, 0, 0, 0])));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 9) done(buf[0] === 0x84 && buf[4] === 0x06);
    });
  });
}

function logTail(n = 40) {
  try {
    return fs.readFileSync(server.log, 'utf8').split('\n').slice(-n).join('\n');
  } catch (e) {
    return '(no log)';
  }
}

async function startServer() {
  assert.ok(fs.existsSync(BIN), `ringdb binary not found at ${BIN} (cargo build --bin ringdb)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ringdb-node-'));
  const port = await freePort();
  const log = path.join(dir, 'ringdb.stderr.log');
  const fd = fs.openSync(log, 'a');
  const proc = spawn(BIN, ['--listen', `127.0.0.1:${port}`, '--data-dir', path.join(dir, 'data'),
    '--log-level', 'info'], { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  const s = { proc, port, dir, log, exited: null };
  proc.on('exit', (code, signal) => { s.exited = { code, signal }; });
  server = s;
  const started = Date.now();
  while (Date.now() - started < 20000) {
    if (s.exited) throw new Error(`ringdb exited during startup: ${JSON.stringify(s.exited)}\n${logTail()}`);
    if (await optionsHandshake(port)) {
      s.startupMs = Date.now() - started;
      return s;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill('SIGKILL');
  throw new Error(`ringdb did not answer OPTIONS within 20s\n${logTail()}`);
}

async function stopServer(s) {
  if (s.exited) throw new Error(`ringdb had already exited: ${JSON.stringify(s.exited)}\n${logTail()}`);
  const exited = new Promise((resolve) => s.proc.once('exit', (code, signal) => resolve({ code, signal })));
  s.proc.kill('SIGTERM');
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve(null), 10000); });
  const res = await Promise.race([exited, timeout]);
  clearTimeout(timer);
  if (res === null) {
    s.proc.kill('SIGKILL');
    throw new Error(`ringdb did not exit within 10s of SIGTERM\n${logTail()}`);
  }
  assert.equal(res.code, 0, `ringdb exit after SIGTERM: ${JSON.stringify(res)}\n${logTail()}`);
  fs.rmSync(s.dir, { recursive: true, force: true });
}

function newClient(keyspace) {
  return new cassandra.Client({
    contactPoints: [`127.0.0.1:${server.port}`],
    localDataCenter: 'datacenter1',
    keyspace,
    socketOptions: { connectTimeout: 10000, readTimeout: 30000 },
  });
}

before(async () => {
  await startServer();
  client = newClient();
  await client.connect();
});

after(async () => {
  let t0 = Date.now();
  if (client) await client.shutdown();
  const shutdownMs = Date.now() - t0;
  t0 = Date.now();
  if (server) await stopServer(server);
  if (process.env.RINGDB_TEST_TIMING) console.log(`# client.shutdown ${shutdownMs} ms, server stop ${Date.now() - t0} ms`);
});

test('connects on protocol v4 and reads system.local', async () => {
  const rs = await client.execute('SELECT release_version, data_center, host_id, tokens FROM system.local');
  assert.equal(rs.rows.length, 1);
  const row = rs.first();
  assert.match(row.release_version, /^4\.\d+/);
  assert.equal(row.data_center, 'datacenter1');
  assert.ok(row.host_id, 'host_id must be non-null');
  assert.ok(row.tokens && row.tokens.length > 0, 'tokens must be non-empty');
  // the driver negotiated down from its preferred version and settled on v4
  assert.equal(client.controlConnection.protocolVersion, 4);
  const hosts = client.hosts.values();
  assert.equal(hosts.length, 1);
  assert.equal(hosts[0].datacenter, 'datacenter1');
  assert.equal(String(hosts[0].hostId), String(row.host_id));
});

test('a wrong localDataCenter is refused by the driver (data_center is honoured)', async () => {
  const c = new cassandra.Client({
    contactPoints: [`127.0.0.1:${server.port}`],
    localDataCenter: 'no-such-dc',
  });
  await assert.rejects(c.connect());
  await c.shutdown();
});

test('table metadata agrees with the schema created', async () => {
  const ks = 'node_ks';
  await client.execute(`CREATE KEYSPACE ${ks} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
  await client.execute(`CREATE TYPE ${ks}.addr (street text, zip int)`);
  await client.execute(`CREATE TABLE ${ks}.events (
      pk1 text, pk2 int, c1 timestamp, c2 uuid, s text STATIC,
      a ascii, b bigint, bl blob, bo boolean, d date, de decimal, du duration, dbl double, f float,
      i inet, sm smallint, ti time, tu timeuuid, tt tinyint, vc varchar, vi varint,
      l list<int>, st set<text>, m map<text, bigint>, fl frozen<list<text>>, tp tuple<int, text>,
      ud frozen<addr>,
      PRIMARY KEY ((pk1, pk2), c1, c2)
    ) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC) AND comment = 'node view' AND default_time_to_live = 10
      AND gc_grace_seconds = 20`);

  const t = await client.metadata.getTable(ks, 'events');
  assert.ok(t, 'getTable returned nothing');
  assert.deepEqual(t.partitionKeys.map((c) => c.name), ['pk1', 'pk2']);
  assert.deepEqual(t.clusteringKeys.map((c) => c.name), ['c1', 'c2']);
  assert.deepEqual(t.clusteringOrder, ['DESC', 'ASC']);
  assert.equal(t.comment, 'node view');
  assert.equal(t.defaultTtl, 10);
  assert.equal(t.gcGraceSeconds, 20);
  const col = t.columnsByName;
  assert.equal(col.s.isStatic, true);
  assert.equal(col.a.isStatic, false);
  const expect = {
    pk1: dataTypes.varchar, pk2: dataTypes.int, c1: dataTypes.timestamp, c2: dataTypes.uuid,
    a: dataTypes.ascii, b: dataTypes.bigint, bl: dataTypes.blob, bo: dataTypes.boolean, d: dataTypes.date,
    de: dataTypes.decimal, dbl: dataTypes.double, f: dataTypes.float, i: dataTypes.inet,
    sm: dataTypes.smallint, ti: dataTypes.time, tu: dataTypes.timeuuid, tt: dataTypes.tinyint,
    vc: dataTypes.varchar, vi: dataTypes.varint, l: dataTypes.list, st: dataTypes.set, m: dataTypes.map,
    fl: dataTypes.list, tp: dataTypes.tuple, ud: dataTypes.udt,
  };
  // the driver reports 'text' as dataTypes.text (0x0a), an alias of varchar (0x0d)
  const sameType = (got, want) => got === want ||
    ([dataTypes.text, dataTypes.varchar].includes(got) && [dataTypes.text, dataTypes.varchar].includes(want));
  for (const [name, code] of Object.entries(expect)) {
    assert.ok(col[name], `column ${name} missing`);
    assert.ok(sameType(col[name].type.code, code), `column ${name}: type code ${col[name].type.code}, want ${code}`);
  }
  // duration: a custom type in v4 or the native code
  assert.ok(col.du.type.code === dataTypes.duration ||
    (col.du.type.code === dataTypes.custom && /DurationType/.test(col.du.type.info)), JSON.stringify(col.du.type));
  assert.equal(col.l.type.info.code, dataTypes.int);
  assert.ok(sameType(col.st.type.info.code, dataTypes.varchar));
  assert.ok(sameType(col.m.type.info[0].code, dataTypes.varchar));
  assert.equal(col.m.type.info[1].code, dataTypes.bigint);
  assert.equal(col.tp.type.info.length, 2);
  assert.equal(col.tp.type.info[0].code, dataTypes.int);
  assert.ok(sameType(col.tp.type.info[1].code, dataTypes.varchar));
  assert.equal(col.ud.type.info.name, 'addr');
  assert.deepEqual(col.ud.type.info.fields.map((f) => f.name), ['street', 'zip']);
  assert.equal(t.columns.length, Object.keys(expect).length + 2); // + s, du

  const udt = await client.metadata.getUdt(ks, 'addr');
  assert.deepEqual(udt.fields.map((f) => f.name), ['street', 'zip']);
  assert.ok(sameType(udt.fields[0].type.code, dataTypes.varchar));
  assert.equal(udt.fields[1].type.code, dataTypes.int);

  const k = client.metadata.keyspaces[ks];
  assert.ok(k, 'keyspace missing from client.metadata.keyspaces');
  assert.match(k.strategy, /SimpleStrategy$/);
  assert.equal(String(k.strategyOptions.replication_factor), '1');
});

test('a schema change from another client reaches this client (SCHEMA_CHANGE event)', async () => {
  const other = newClient();
  await other.connect();
  try {
    await other.execute(`CREATE KEYSPACE node_ev WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}`);
    const deadline = Date.now() + 10000;
    while (!client.metadata.keyspaces.node_ev && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const k = client.metadata.keyspaces.node_ev;
    assert.ok(k, 'the first client never saw the keyspace created by the second one');
    assert.match(k.strategy, /NetworkTopologyStrategy$/);
    assert.equal(String(k.strategyOptions.datacenter1), '1');

    await other.execute('CREATE TABLE node_ev.t (k int PRIMARY KEY, v text)');
    await client.metadata.getTable('node_ev', 't'); // warm the cache
    await other.execute('ALTER TABLE node_ev.t ADD w bigint');
    let t;
    const deadline2 = Date.now() + 10000;
    do {
      t = await client.metadata.getTable('node_ev', 't');
      if (t && t.columnsByName.w) break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < deadline2);
    assert.ok(t && t.columnsByName.w, 'ALTER TABLE ADD did not reach the other client\'s metadata');
    assert.equal(t.columnsByName.w.type.code, dataTypes.bigint);
  } finally {
    await other.shutdown();
  }
});

test('a session bound to a keyspace (USE) works', async () => {
  const c = newClient('node_ks');
  await c.connect();
  try {
    const rs = await c.execute('SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?', ['node_ks']);
    assert.deepEqual(rs.rows.map((r) => r.table_name), ['events']);
    assert.equal(c.keyspace, 'node_ks');
  } finally {
    await c.shutdown();
  }
});

test('errors carry the right classes', async () => {
  await assert.rejects(client.execute('SELECT * FROM node_ks.no_such_table'),
    (e) => e.code === cassandra.types.responseErrorCodes.invalid);
  await assert.rejects(client.execute('THIS IS NOT CQL'),
    (e) => e.code === cassandra.types.responseErrorCodes.syntaxError);
  await assert.rejects(
    client.execute(`CREATE KEYSPACE node_ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`),
    (e) => e.code === cassandra.types.responseErrorCodes.alreadyExists && e.keyspace === 'node_ks');
  const rs = await client.execute('SELECT release_version FROM system.local');
  assert.equal(rs.rows.length, 1);
});
