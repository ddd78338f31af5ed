import { main } from './main/worker';
import { runProcess } from './main/wiring';

// The worker process's entry point; its composition root is src/main/worker.ts.
runProcess(main);
