// Every built-in observer runs @qtk/testkit's observer conformance suite, as a third-party one would.
import { type ObserverConformanceOptions, describeObserverConformance } from '@qtk/testkit';
import { builtinObservers } from './builtin.js';

const OPTIONS: Record<string, ObserverConformanceOptions> = {
  min_max: { perChannel: true, nan: 'ignored' },
  moving_average_min_max: { nan: 'ignored' },
  moving_average_per_channel_min_max: { perChannel: true, nan: 'ignored' },
  percentile: { nan: 'ignored' },
  mse: { perChannel: true, nan: 'ignored' },
  kl: { nan: 'ignored' },
  mix: { nan: 'ignored' },
  // a configured scale: the data changes nothing, so only sanity is checked against it
  fixed_scale: {
    options: { scale: 0.02 },
    perChannel: true,
    perChannelOptions: { scale: [0.01, 0.1, 1] },
    dataIndependent: true,
  },
};

for (const f of builtinObservers) describeObserverConformance(f, OPTIONS[f.name] ?? {});
