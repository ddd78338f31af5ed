import { parseAbi, parseEventLogs, zeroAddress, type Address, type Hash, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { anvilAccount, startAnvil, type AnvilHandle } from '../../dev/local/infra/anvil';
import { freePort } from '../../dev/local/infra/ports';
import { ensureLocalContracts, type LocalContracts } from '../../dev/local/local-contracts';
import { localSigner, waitForSuccess, type LocalSigner } from '../../dev/local/local-signer';
import { rpc } from '../support/chain';
import {
  blockOnToken,
  sanctionOnOracle,
  screeningStatus,
  unblockOnToken,
  unsanctionOnOracle,
} from '../support/screening';

// The local token's issuer blocklist and the test sanctions oracle on a real anvil, called through
// the interfaces of the real contracts (USDT0's blocklist, Chainalysis' oracle) written out here by
// hand: a selector the local contracts got wrong fails here, not in the service's screening.

const TOKEN_ABI = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function totalSupply() view returns (uint256)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function transferFrom(address from, address to, uint256 amount) returns (bool)',
  'function mint(address to, uint256 amount)',
  'function isBlocked(address) view returns (bool)',
  'function addToBlockedList(address)',
  'function removeFromBlockedList(address)',
  'function destroyBlockedFunds(address)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event BlockPlaced(address indexed account)',
  'event BlockReleased(address indexed account)',
  'event DestroyedBlockedFunds(address indexed account, uint256 amount)',
  'error OwnableUnauthorizedAccount(address account)',
]);
const ORACLE_ABI = parseAbi([
  'function isSanctioned(address) view returns (bool)',
  'function addToSanctionsList(address[])',
  'function removeFromSanctionsList(address[])',
  'event SanctionedAddressesAdded(address[] addrs)',
  'event SanctionedAddressesRemoved(address[] addrs)',
  'error OwnableUnauthorizedAccount(address account)',
]);

const USDT = (whole: number) => BigInt(whole) * 1_000_000n;

let anvil: AnvilHandle;
let contracts: LocalContracts;
let owner: LocalSigner;
let stranger: LocalSigner;

beforeAll(async () => {
  anvil = await startAnvil({ port: await freePort() });
  contracts = await ensureLocalContracts(anvil.rpcUrl);
  owner = await localSigner(anvil.rpcUrl, anvilAccount('deployer').privateKey);
  stranger = await localSigner(anvil.rpcUrl, anvilAccount('spare').privateKey);
});

afterAll(async () => {
  await anvil?.stop();
});

const freshAddress = (): Address => privateKeyToAddress(generatePrivateKey());

/** A wallet of its own with gas and `units` of the token, so no test sees another's block. */
async function fundedWallet(units: bigint): Promise<LocalSigner & { address: Address }> {
  const key: Hex = generatePrivateKey();
  const address = privateKeyToAddress(key);
  await rpc(anvil.rpcUrl, 'anvil_setBalance', [address, '0xDE0B6B3A7640000']); // 1 ETH
  await send(owner, 'mint', [address, units]);
  return { ...(await localSigner(anvil.rpcUrl, key)), address };
}

/** A token call from `signer`, mined; throws (with the revert reason) when it would revert. */
async function send(signer: LocalSigner, functionName: string, args: unknown[]) {
  const hash: Hash = await signer.wallet.writeContract({
    address: contracts.usdtAddress,
    abi: TOKEN_ABI,
    functionName,
    args,
  } as never);
  return waitForSuccess(signer.publicClient, hash, functionName);
}

async function sendToOracle(signer: LocalSigner, functionName: string, wallets: Address[]) {
  const hash: Hash = await signer.wallet.writeContract({
    address: contracts.sanctionsOracleAddress,
    abi: ORACLE_ABI,
    functionName,
    args: [wallets],
  } as never);
  return waitForSuccess(signer.publicClient, hash, functionName);
}

const tokenRead = (functionName: 'balanceOf' | 'isBlocked', account: Address) =>
  owner.publicClient.readContract({
    address: contracts.usdtAddress,
    abi: TOKEN_ABI,
    functionName,
    args: [account],
  }) as Promise<bigint | boolean>;
const balanceOf = (account: Address) => tokenRead('balanceOf', account) as Promise<bigint>;
const isBlocked = (account: Address) => tokenRead('isBlocked', account) as Promise<boolean>;
const totalSupply = () =>
  owner.publicClient.readContract({
    address: contracts.usdtAddress,
    abi: TOKEN_ABI,
    functionName: 'totalSupply',
  });
const isSanctioned = (account: Address) =>
  owner.publicClient.readContract({
    address: contracts.sanctionsOracleAddress,
    abi: ORACLE_ABI,
    functionName: 'isSanctioned',
    args: [account],
  });

describe('TestUSDT blocklist', () => {
  it('lets a transfer TO a blocked wallet through: only senders are checked', async () => {
    const sender = await fundedWallet(USDT(10));
    const receiver = freshAddress();
    await blockOnToken(anvil.rpcUrl, contracts.usdtAddress, receiver);
    expect(await isBlocked(receiver)).toBe(true);

    await send(sender, 'transfer', [receiver, USDT(4)]);
    expect(await balanceOf(receiver)).toBe(USDT(4));
    expect(await balanceOf(sender.address)).toBe(USDT(6));
  });

  it('refuses a transfer FROM a blocked wallet, and lets it send again once unblocked', async () => {
    const holder = await fundedWallet(USDT(10));
    const receiver = freshAddress();
    await blockOnToken(anvil.rpcUrl, contracts.usdtAddress, holder.address);

    await expect(send(holder, 'transfer', [receiver, USDT(1)])).rejects.toThrow('TestUSDT: from is blocked');
    expect(await balanceOf(holder.address)).toBe(USDT(10));

    await unblockOnToken(anvil.rpcUrl, contracts.usdtAddress, holder.address);
    await send(holder, 'transfer', [receiver, USDT(1)]);
    expect(await balanceOf(receiver)).toBe(USDT(1));
  });

  it('refuses transferFrom by a blocked spender and from a blocked holder', async () => {
    const holder = await fundedWallet(USDT(10));
    const spender = await fundedWallet(0n);
    const receiver = freshAddress();
    await send(holder, 'approve', [spender.address, USDT(5)]);

    await blockOnToken(anvil.rpcUrl, contracts.usdtAddress, spender.address);
    await expect(send(spender, 'transferFrom', [holder.address, receiver, USDT(1)])).rejects.toThrow(
      'TestUSDT: spender is blocked',
    );
    await unblockOnToken(anvil.rpcUrl, contracts.usdtAddress, spender.address);

    await blockOnToken(anvil.rpcUrl, contracts.usdtAddress, holder.address);
    await expect(send(spender, 'transferFrom', [holder.address, receiver, USDT(1)])).rejects.toThrow(
      'TestUSDT: from is blocked',
    );
    expect(await balanceOf(holder.address)).toBe(USDT(10));

    // Neither blocked: the same call goes through, so the refusals above were the blocklist's.
    await unblockOnToken(anvil.rpcUrl, contracts.usdtAddress, holder.address);
    await send(spender, 'transferFrom', [holder.address, receiver, USDT(1)]);
    expect(await balanceOf(receiver)).toBe(USDT(1));
  });

  it('lets only the owner block, unblock and destroy, announcing each change', async () => {
    const wallet = await fundedWallet(USDT(3));
    const unauthorized = /OwnableUnauthorizedAccount/;

    await expect(send(stranger, 'addToBlockedList', [wallet.address])).rejects.toThrow(unauthorized);
    expect(await isBlocked(wallet.address)).toBe(false);

    const placed = await send(owner, 'addToBlockedList', [wallet.address]);
    expect(parseEventLogs({ abi: TOKEN_ABI, logs: placed.logs, eventName: 'BlockPlaced' })).toEqual([
      expect.objectContaining({ args: { account: wallet.address } }),
    ]);
    await expect(send(stranger, 'removeFromBlockedList', [wallet.address])).rejects.toThrow(unauthorized);
    await expect(send(stranger, 'destroyBlockedFunds', [wallet.address])).rejects.toThrow(unauthorized);
    expect(await isBlocked(wallet.address)).toBe(true);
    expect(await balanceOf(wallet.address)).toBe(USDT(3));

    const released = await send(owner, 'removeFromBlockedList', [wallet.address]);
    expect(parseEventLogs({ abi: TOKEN_ABI, logs: released.logs, eventName: 'BlockReleased' })).toEqual([
      expect.objectContaining({ args: { account: wallet.address } }),
    ]);
    expect(await isBlocked(wallet.address)).toBe(false);
  });

  it("burns a blocked wallet's whole balance, lowering the total supply, and refuses an unblocked one", async () => {
    const wallet = await fundedWallet(USDT(7));

    await expect(send(owner, 'destroyBlockedFunds', [wallet.address])).rejects.toThrow(
      'TestUSDT: account is not blocked',
    );
    expect(await balanceOf(wallet.address)).toBe(USDT(7));

    await blockOnToken(anvil.rpcUrl, contracts.usdtAddress, wallet.address);
    const supplyBefore = await totalSupply();
    const destroyed = await send(owner, 'destroyBlockedFunds', [wallet.address]);

    expect(await balanceOf(wallet.address)).toBe(0n);
    expect(await totalSupply()).toBe(supplyBefore - USDT(7));
    expect(
      parseEventLogs({ abi: TOKEN_ABI, logs: destroyed.logs }).map((l) => [l.eventName, l.args]),
    ).toEqual([
      ['DestroyedBlockedFunds', { account: wallet.address, amount: USDT(7) }],
      ['Transfer', { from: wallet.address, to: zeroAddress, value: USDT(7) }],
    ]);
  });
});

describe('TestSanctionsOracle', () => {
  it('answers false, true once the owner lists a wallet, false again once removed', async () => {
    const [listed, alsoListed] = [freshAddress(), freshAddress()];
    expect(await isSanctioned(listed)).toBe(false);

    const added = await sendToOracle(owner, 'addToSanctionsList', [listed, alsoListed]);
    expect(await isSanctioned(listed)).toBe(true);
    expect(await isSanctioned(alsoListed)).toBe(true);
    expect(parseEventLogs({ abi: ORACLE_ABI, logs: added.logs }).map((l) => l.eventName)).toEqual([
      'SanctionedAddressesAdded',
    ]);

    const removed = await sendToOracle(owner, 'removeFromSanctionsList', [listed]);
    expect(await isSanctioned(listed)).toBe(false);
    expect(await isSanctioned(alsoListed)).toBe(true);
    expect(parseEventLogs({ abi: ORACLE_ABI, logs: removed.logs }).map((l) => l.eventName)).toEqual([
      'SanctionedAddressesRemoved',
    ]);
  });

  it('lets only the owner change the list', async () => {
    const wallet = freshAddress();
    await expect(sendToOracle(stranger, 'addToSanctionsList', [wallet])).rejects.toThrow(
      /OwnableUnauthorizedAccount/,
    );
    expect(await isSanctioned(wallet)).toBe(false);

    await sendToOracle(owner, 'addToSanctionsList', [wallet]);
    await expect(sendToOracle(stranger, 'removeFromSanctionsList', [wallet])).rejects.toThrow(
      /OwnableUnauthorizedAccount/,
    );
    expect(await isSanctioned(wallet)).toBe(true);
  });
});

describe('test/support/screening.ts', () => {
  it('puts a wallet on each list and takes it off, as screeningStatus then reads it', async () => {
    const wallet = freshAddress();
    const status = () => screeningStatus(anvil.rpcUrl, contracts, wallet);
    expect(await status()).toEqual({ blocked: false, sanctioned: false });

    await sanctionOnOracle(anvil.rpcUrl, contracts.sanctionsOracleAddress, wallet);
    expect(await status()).toEqual({ blocked: false, sanctioned: true });
    await blockOnToken(anvil.rpcUrl, contracts.usdtAddress, wallet);
    expect(await status()).toEqual({ blocked: true, sanctioned: true });

    await unsanctionOnOracle(anvil.rpcUrl, contracts.sanctionsOracleAddress, wallet);
    expect(await status()).toEqual({ blocked: true, sanctioned: false });
    await unblockOnToken(anvil.rpcUrl, contracts.usdtAddress, wallet);
    expect(await status()).toEqual({ blocked: false, sanctioned: false });
  });
});
