import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';

import {
  bitString,
  explicit,
  objectIdentifier,
  octetString,
  pem,
  sequence,
  set,
  smallInteger,
  time,
  tlv,
  TRUE,
  unsignedInteger,
  utf8String,
} from './der';

/**
 * The API Pix face's mutual TLS material: a CA, the server's certificate and the client certificate
 * the service presents. Made at start in SANDBOX_API_PIX_CERT_DIR and reused while valid, since the
 * service may already hold the CA and client files from an earlier start.
 */
export interface ApiPixTls {
  /** PEM, what the server trusts for clients and the client trusts for the server. */
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** File names in the directory (keys are written mode 0600). */
export const CERT_FILES = {
  ca: 'ca.pem',
  caKey: 'ca-key.pem',
  serverCert: 'server.pem',
  serverKey: 'server-key.pem',
  clientCert: 'client.pem',
  clientKey: 'client-key.pem',
} as const;

const OID = {
  commonName: '2.5.4.3',
  ecPublicKey: '1.2.840.10045.2.1',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

const VALIDITY_DAYS = 3650;
/** A certificate expiring sooner than this is made again rather than reused. */
const RENEW_BEFORE_MS = 7 * 24 * 3600 * 1000;
const CLIENT_NAME = 'payout-service (API Pix client)';

type Role = 'ca' | 'server' | 'client';

interface Subject {
  name: string;
  role: Role;
  publicKey: KeyObject;
  /** The server's DNS names and IP addresses. */
  altNames?: readonly string[];
}

interface Issuer {
  name: string;
  key: KeyObject;
  publicKey: KeyObject;
}

const keyId = (publicKey: KeyObject): Buffer =>
  createHash('sha1')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest();

const distinguishedName = (cn: string): Buffer =>
  sequence(set(sequence(objectIdentifier(OID.commonName), utf8String(cn))));

const extension = (oid: string, value: Buffer, critical = false): Buffer =>
  sequence(objectIdentifier(oid), ...(critical ? [TRUE] : []), octetString(value));

function altName(name: string): Buffer {
  if (isIP(name) === 4) return tlv(0x87, Buffer.from(name.split('.').map(Number)));
  return tlv(0x82, Buffer.from(name, 'ascii'));
}

function extensions(subject: Subject, issuer: Issuer): Buffer {
  const list = [
    subject.role === 'ca'
      ? extension(OID.basicConstraints, sequence(TRUE), true)
      : extension(OID.basicConstraints, sequence(), true),
    // keyCertSign + cRLSign for the CA (bits 5, 6), digitalSignature (bit 0) for the leaves.
    subject.role === 'ca'
      ? extension(OID.keyUsage, bitString(Buffer.from([0x06]), 1), true)
      : extension(OID.keyUsage, bitString(Buffer.from([0x80]), 7), true),
    extension(OID.subjectKeyIdentifier, octetString(keyId(subject.publicKey))),
    extension(OID.authorityKeyIdentifier, sequence(tlv(0x80, keyId(issuer.publicKey)))),
  ];
  if (subject.role !== 'ca') {
    const purpose = subject.role === 'server' ? OID.serverAuth : OID.clientAuth;
    list.push(extension(OID.extKeyUsage, sequence(objectIdentifier(purpose))));
  }
  if (subject.altNames) {
    list.push(extension(OID.subjectAltName, sequence(...subject.altNames.map(altName))));
  }
  return explicit(3, sequence(...list));
}

function issue(subject: Subject, issuer: Issuer, now: Date): string {
  const signatureAlgorithm = sequence(objectIdentifier(OID.ecdsaWithSha256));
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const tbs = sequence(
    explicit(0, smallInteger(2)), // v3
    unsignedInteger(serial),
    signatureAlgorithm,
    distinguishedName(issuer.name),
    sequence(
      time(new Date(now.getTime() - 3600_000)),
      time(new Date(now.getTime() + VALIDITY_DAYS * 86_400_000)),
    ),
    distinguishedName(subject.name),
    subject.publicKey.export({ type: 'spki', format: 'der' }),
    extensions(subject, issuer),
  );
  const signature = sign('sha256', tbs, issuer.key);
  return pem('CERTIFICATE', sequence(tbs, signatureAlgorithm, bitString(signature)));
}

const newKey = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const keyPem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();

/** The files in `dir`, or undefined when one is missing or unreadable as what it should be. */
function read(dir: string, certFile: string, keyFile: string) {
  const certPath = join(dir, certFile);
  const keyPath = join(dir, keyFile);
  if (!existsSync(certPath) || !existsSync(keyPath)) return undefined;
  try {
    const certPem = readFileSync(certPath, 'utf8');
    const keyText = readFileSync(keyPath, 'utf8');
    const cert = new X509Certificate(certPem);
    const key = createPrivateKey(keyText);
    if (!cert.checkPrivateKey(key)) return undefined;
    return { certPem, keyPem: keyText, cert, key };
  } catch {
    return undefined;
  }
}

const lastsUntil = (cert: X509Certificate, now: Date) =>
  new Date(cert.validTo).getTime() - now.getTime() > RENEW_BEFORE_MS &&
  new Date(cert.validFrom).getTime() <= now.getTime();

function write(dir: string, file: string, text: string, secret: boolean): void {
  const path = join(dir, file);
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, text, { mode: secret ? 0o600 : 0o644 });
  chmodSync(tmp, secret ? 0o600 : 0o644); // the umask may have narrowed or the file existed
  renameSync(tmp, path);
}

/**
 * The CA, server and client certificates in `dir`: each one reused if present, valid for at least a
 * week more and (leaves) issued by the CA in use, with the server's names covering `serverNames`;
 * otherwise made again. A new CA makes both leaves new.
 */
export function loadOrCreateApiPixTls(
  dir: string,
  serverNames: readonly string[],
  now: Date = new Date(),
): ApiPixTls & { created: string[] } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const created: string[] = [];
  let newCa = false;

  let ca = read(dir, CERT_FILES.ca, CERT_FILES.caKey);
  if (!ca || !ca.cert.ca || !lastsUntil(ca.cert, now) || !ca.cert.verify(ca.cert.publicKey)) {
    const { privateKey, publicKey } = newKey();
    const name = `API Pix sandbox CA ${randomBytes(4).toString('hex')}`;
    const certPem = issue({ name, role: 'ca', publicKey }, { name, key: privateKey, publicKey }, now);
    write(dir, CERT_FILES.caKey, keyPem(privateKey), true);
    write(dir, CERT_FILES.ca, certPem, false);
    created.push(CERT_FILES.ca);
    newCa = true;
    ca = read(dir, CERT_FILES.ca, CERT_FILES.caKey);
    if (!ca) throw new Error(`could not read back the CA written to ${dir}`);
  }
  const issuer: Issuer = {
    name: ca.cert.subject.replace(/^CN=/, ''),
    key: ca.key,
    publicKey: ca.cert.publicKey,
  };
  const issuedByCa = (cert: X509Certificate) =>
    !newCa && cert.checkIssued(ca.cert) && cert.verify(ca.cert.publicKey) && lastsUntil(cert, now);
  const covers = (cert: X509Certificate) =>
    serverNames.every((name) =>
      isIP(name)
        ? cert.checkIP(name) !== undefined
        : cert.checkHost(name, { wildcards: false }) !== undefined,
    );

  const leaf = (
    role: 'server' | 'client',
    certFile: string,
    keyFile: string,
    ok: (c: X509Certificate) => boolean,
  ) => {
    const existing = read(dir, certFile, keyFile);
    if (existing && issuedByCa(existing.cert) && ok(existing.cert)) return existing;
    const { privateKey, publicKey } = newKey();
    const subject: Subject =
      role === 'server'
        ? { name: serverNames[0] ?? 'localhost', role, publicKey, altNames: serverNames }
        : { name: CLIENT_NAME, role, publicKey };
    write(dir, keyFile, keyPem(privateKey), true);
    write(dir, certFile, issue(subject, issuer, now), false);
    created.push(certFile);
    const made = read(dir, certFile, keyFile);
    if (!made) throw new Error(`could not read back ${certFile} written to ${dir}`);
    return made;
  };
  const server = leaf('server', CERT_FILES.serverCert, CERT_FILES.serverKey, covers);
  const client = leaf('client', CERT_FILES.clientCert, CERT_FILES.clientKey, () => true);

  return {
    ca: ca.certPem,
    serverCert: server.certPem,
    serverKey: server.keyPem,
    clientCert: client.certPem,
    clientKey: client.keyPem,
    created,
  };
}
