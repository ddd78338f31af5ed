import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { createPublicClient, erc20Abi, http, type Address, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { anvilAccount, startAnvil, type AnvilHandle } from '../../dev/local/infra/anvil';
import { freePort } from '../../dev/local/infra/ports';
import {
  ensureLocalContracts,
  FRESH_CHAIN_CONTRACTS,
  localChainEnv,
  type LocalContracts,
} from '../../dev/local/local-contracts';
import { rpc } from '../support/chain';
import { screeningStatus } from '../support/screening';
import { feedStatus } from '../support/price-feeds';

// How the local chain's contracts come to be, on a real anvil: where a fresh chain gets them
// (docker-compose.yml names those addresses), when an existing chain keeps or redeploys them, and
// the by-hand tool that lists a wallet on them.

const ROOT = path.resolve(__dirname, '../..');
const deployer = anvilAccount('deployer').address;

let anvil: AnvilHandle;
let client: PublicClient;
let first: LocalContracts;

beforeAll(async () => {
  anvil = await startAnvil({ port: await freePort() });
  client = createPublicClient({ transport: http(anvil.rpcUrl) });
  first = await ensureLocalContracts(anvil.rpcUrl);
});

afterAll(async () => {
  await anvil?.stop();
});

const deployerNonce = () => client.getTransactionCount({ address: deployer });
const freshAddress = (): Address => privateKeyToAddress(generatePrivateKey());

describe('ensureLocalContracts', () => {
  it('puts them at the addresses docker-compose.yml names on a fresh chain, the token funded', async () => {
    expect(first).toEqual(FRESH_CHAIN_CONTRACTS);
    for (const role of ['provider-sandbox', 'treasury'] as const) {
      const balance = await client.readContract({
        address: first.usdtAddress,
        abi: erc20Abi,
        functionName: 'balanceOf',
        args: [anvilAccount(role).address],
      });
      expect({ role, balance }).toEqual({ role, balance: 10_000_000_000_000n });
    }
    // The feeds at realistic answers, Chainlink's 8 decimals, updated now.
    const brl = await feedStatus(anvil.rpcUrl, first.brlUsdFeedAddress);
    const usdt = await feedStatus(anvil.rpcUrl, first.usdtUsdFeedAddress);
    expect([brl.answer, brl.decimals, usdt.answer, usdt.decimals]).toEqual([18_000_000n, 8, 100_010_000n, 8]);
    expect(Math.abs(Number(brl.updatedAt) - Date.now() / 1000)).toBeLessThan(30);
  });

  it('keeps them all, sending nothing, while the chain holds them as built from today’s source', async () => {
    const nonce = await deployerNonce();
    expect(await ensureLocalContracts(anvil.rpcUrl, { known: first })).toEqual(first);
    expect(await deployerNonce()).toBe(nonce);
  });

  it('deploys again only the one the chain lost', async () => {
    await rpc(anvil.rpcUrl, 'anvil_setCode', [first.sanctionsOracleAddress, '0x']);
    await rpc(anvil.rpcUrl, 'anvil_setCode', [first.usdtUsdFeedAddress, '0x']);
    const again = await ensureLocalContracts(anvil.rpcUrl, { known: first });
    expect(again.usdtAddress).toBe(first.usdtAddress);
    expect(again.brlUsdFeedAddress).toBe(first.brlUsdFeedAddress);
    expect(again.usdtUsdFeedAddress).not.toBe(first.usdtUsdFeedAddress);
    expect((await feedStatus(anvil.rpcUrl, again.usdtUsdFeedAddress)).answer).toBe(100_010_000n);
    expect(again.sanctionsOracleAddress).not.toBe(first.sanctionsOracleAddress);
    expect(await screeningStatus(anvil.rpcUrl, again, freshAddress())).toEqual({
      blocked: false,
      sanctioned: false,
    });
  });

  it('deploys again a contract built from an older source (a token from before the blocklist)', async () => {
    const known = await ensureLocalContracts(anvil.rpcUrl, { known: first });
    // Any other code stands for an older build: here the oracle's, which has no isBlocked.
    const otherCode = await client.getCode({ address: known.sanctionsOracleAddress });
    await rpc(anvil.rpcUrl, 'anvil_setCode', [known.usdtAddress, otherCode]);

    const again = await ensureLocalContracts(anvil.rpcUrl, { known });
    expect(again.sanctionsOracleAddress).toBe(known.sanctionsOracleAddress);
    expect(again.usdtAddress).not.toBe(known.usdtAddress);
    expect((await screeningStatus(anvil.rpcUrl, again, freshAddress())).blocked).toBe(false);
  });
});

describe('localChainEnv', () => {
  it('gives the api and worker the local contracts unless the environment names its own', () => {
    const own = { usdt: freshAddress(), oracle: freshAddress(), feed: freshAddress() };
    const local = {
      USDT_CONTRACT_ADDRESS: first.usdtAddress,
      SANCTIONS_ORACLE_ADDRESS: first.sanctionsOracleAddress,
      PRICE_FEED_BRL_USD_ADDRESS: first.brlUsdFeedAddress,
      PRICE_FEED_USDT_USD_ADDRESS: first.usdtUsdFeedAddress,
    };
    expect(localChainEnv({}, first)).toEqual(local);
    expect(localChainEnv({ SANCTIONS_ORACLE_ADDRESS: own.oracle }, first)).toEqual({
      ...local,
      SANCTIONS_ORACLE_ADDRESS: own.oracle,
    });
    expect(localChainEnv({ USDT_CONTRACT_ADDRESS: own.usdt }, first)).toEqual({
      ...local,
      USDT_CONTRACT_ADDRESS: own.usdt,
    });
    expect(localChainEnv({ PRICE_FEED_BRL_USD_ADDRESS: own.feed }, first)).toEqual({
      ...local,
      PRICE_FEED_BRL_USD_ADDRESS: own.feed,
    });
  });
});

describe('npm run local:screening', () => {
  let dataDir: string;
  let contracts: LocalContracts;

  beforeAll(async () => {
    contracts = await ensureLocalContracts(anvil.rpcUrl, { known: first });
    // The record `npm start` leaves in its data folder, which the tool reads.
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'local-screening-'));
    writeFileSync(path.join(dataDir, 'local-chain.json'), JSON.stringify(contracts));
  });

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const run = (...args: string[]) => {
    const env: NodeJS.ProcessEnv = { ...process.env, EVM_RPC_URL: anvil.rpcUrl, LOCAL_DATA_DIR: dataDir };
    delete env.USDT_CONTRACT_ADDRESS;
    delete env.SANCTIONS_ORACLE_ADDRESS;
    return promisify(execFile)(
      process.execPath,
      ['--import', pathToFileURL(require.resolve('tsx')).href, 'dev/local/screening-cli.ts', ...args],
      { cwd: ROOT, env },
    );
  };

  it('lists a wallet on the contracts npm start recorded and prints what screening now reads', async () => {
    const wallet = freshAddress();
    const blocked = await run('block', wallet);
    expect(blocked.stdout).toBe(
      `${wallet}: blocked on USDT ${contracts.usdtAddress}, not sanctioned on oracle ${contracts.sanctionsOracleAddress}\n`,
    );
    await run('sanction', wallet.toLowerCase());
    expect(await screeningStatus(anvil.rpcUrl, contracts, wallet)).toEqual({
      blocked: true,
      sanctioned: true,
    });

    await run('unblock', wallet);
    await run('unsanction', wallet);
    expect(await screeningStatus(anvil.rpcUrl, contracts, wallet)).toEqual({
      blocked: false,
      sanctioned: false,
    });
  });

  it('refuses an unknown action or a malformed wallet, naming its usage', async () => {
    await expect(run('freeze', freshAddress())).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('usage: npm run local:screening -- <block|unblock|'),
    });
    await expect(run('block', '0x1234')).rejects.toMatchObject({ code: 1 });
  });
});

describe('npm run local:feeds', () => {
  let dataDir: string;
  let contracts: LocalContracts;

  beforeAll(async () => {
    contracts = await ensureLocalContracts(anvil.rpcUrl, { known: first });
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'local-feeds-'));
    writeFileSync(path.join(dataDir, 'local-chain.json'), JSON.stringify(contracts));
  });

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const run = (...args: string[]) => {
    const env: NodeJS.ProcessEnv = { ...process.env, EVM_RPC_URL: anvil.rpcUrl, LOCAL_DATA_DIR: dataDir };
    delete env.PRICE_FEED_BRL_USD_ADDRESS;
    delete env.PRICE_FEED_USDT_USD_ADDRESS;
    return promisify(execFile)(
      process.execPath,
      ['--import', pathToFileURL(require.resolve('tsx')).href, 'dev/local/feeds-cli.ts', ...args],
      { cwd: ROOT, env },
    );
  };
  const age = async (feed: Address) =>
    Math.floor(Date.now() / 1000) - Number((await feedStatus(anvil.rpcUrl, feed)).updatedAt);

  it('sets an answer, makes a feed stale and refreshes it, printing both feeds', async () => {
    const set = await run('set', 'brl-usd', '0.19');
    expect((await feedStatus(anvil.rpcUrl, contracts.brlUsdFeedAddress)).answer).toBe(19_000_000n);
    expect(set.stdout).toMatch(
      new RegExp(
        `^brl-usd ${contracts.brlUsdFeedAddress}: 0\\.19 \\(round \\d+, updated \\d+ s ago\\)\nusdt-usd `,
      ),
    );

    await run('stale', 'usdt-usd', '100000');
    expect(await age(contracts.usdtUsdFeedAddress)).toBeGreaterThanOrEqual(100_000);
    expect((await feedStatus(anvil.rpcUrl, contracts.usdtUsdFeedAddress)).answer).toBe(100_010_000n);

    await run('refresh');
    expect(await age(contracts.usdtUsdFeedAddress)).toBeLessThan(30);
    expect((await feedStatus(anvil.rpcUrl, contracts.brlUsdFeedAddress)).answer).toBe(19_000_000n);
  });

  it('refuses an unknown action or feed, naming its usage', async () => {
    await expect(run('freeze')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('usage: npm run local:feeds -- status'),
    });
    await expect(run('set', 'eur-usd', '1.1')).rejects.toMatchObject({ code: 1 });
    await expect(run('set', 'brl-usd', '-1')).rejects.toMatchObject({ code: 1 });
  });
});
