/**
 * Preloaded (`--import`) into the node services `npm start` runs. The launcher can die without a
 * chance to stop them (SIGKILL, the OOM killer); its end of the IPC channel then closes, and the
 * service stops itself the way it stops for the launcher: SIGTERM, so it drains as usual. Without
 * this they would keep the api's ports and block the next start.
 *
 * Plain JavaScript in a data: URL rather than a .ts file: the worker's workflow threads inherit
 * the preloads, and there tsx does not load TypeScript. The channel is unref'd because it is a
 * watch, not work: it must not keep a finished service alive. Threads have no channel: a no-op.
 */
const source = `if (process.send && process.channel) {
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}`;

export const EXIT_WITH_LAUNCHER_IMPORT = `data:text/javascript,${encodeURIComponent(source)}`;
