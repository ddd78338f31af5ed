import { nextRestartDelay, restartDelay, RESTART_BACKOFF_MS } from '../../dev/local/restart-policy';

describe('npm start: restarting a crashed service', () => {
  it('backs off 1 s, 2 s, 4 s ... up to 30 s while the service keeps crashing at start', () => {
    const delays: number[] = [];
    let scheduled: number = RESTART_BACKOFF_MS.first;
    for (let crash = 0; crash < 8; crash++) {
      const delay = restartDelay(scheduled, 500);
      delays.push(delay);
      scheduled = nextRestartDelay(delay);
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('starts over after a run long enough to count as healthy', () => {
    expect(restartDelay(30_000, RESTART_BACKOFF_MS.healthyAfter + 1)).toBe(RESTART_BACKOFF_MS.first);
    expect(restartDelay(30_000, RESTART_BACKOFF_MS.healthyAfter - 1)).toBe(30_000);
  });
});
