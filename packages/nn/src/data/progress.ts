export interface ProgressStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressOptions {
  total: number;
  label?: string;
  /** Default: process.stderr, or where there is no `process` (a browser) console.log, one line per update. */
  stream?: ProgressStream;
  /** false keeps the bar silent whatever the stream (default true: draw on a terminal, or anywhere when forced). */
  enabled?: boolean;
  /**
   * Draw even when the stream is not a terminal (then one line per update, at most every `intervalMs`).
   * The environment variable QTK_PROGRESS=force does the same for every bar, for logs of long runs.
   */
  force?: boolean;
  /** Minimum time between redraws (default 100 ms on a terminal, 2000 ms otherwise). */
  intervalMs?: number;
  /** Name of one unit in the rate (default 'it'). */
  unit?: string;
  /** Clock in ms (for tests). */
  now?: () => number;
}

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

type Info = Record<string, string | number>;

const CONSOLE_STREAM: ProgressStream = { write: (chunk) => console.log(chunk.trimEnd()), isTTY: false };

function formatInfo(info: Info | undefined): string {
  if (!info) return '';
  return Object.entries(info)
    .map(([k, v]) => `${k}=${typeof v === 'number' ? (Number.isInteger(v) ? v : v.toPrecision(4)) : v}`)
    .join(' ');
}

/**
 * A text progress bar on stderr with rate and ETA, for training loops. Silent when the stream is
 * not a terminal unless `force` is set, so logs and CI output stay clean.
 */
export class ProgressBar {
  readonly total: number;
  readonly enabled: boolean;
  current = 0;
  private readonly label: string;
  private readonly stream: ProgressStream;
  private readonly tty: boolean;
  private readonly intervalMs: number;
  private readonly unit: string;
  private readonly now: () => number;
  private readonly start: number;
  private lastDraw = -Infinity;
  private info: Info | undefined;
  private finished = false;

  constructor(options: ProgressOptions) {
    this.total = Math.max(0, options.total);
    this.label = options.label ?? '';
    this.stream = options.stream ?? (typeof process !== 'undefined' ? process.stderr : CONSOLE_STREAM);
    this.tty = this.stream.isTTY === true;
    const forcedByEnv = typeof process !== 'undefined' && process.env?.QTK_PROGRESS === 'force';
    this.enabled = options.enabled !== false && (this.tty || options.force === true || forcedByEnv);
    this.intervalMs = options.intervalMs ?? (this.tty ? 100 : 2000);
    this.unit = options.unit ?? 'it';
    this.now = options.now ?? (() => performance.now());
    this.start = this.now();
  }

  /** Advances by `n` and optionally updates the trailing key=value info (loss, accuracy...). */
  tick(n = 1, info?: Info): void {
    this.update(this.current + n, info);
  }

  update(current: number, info?: Info): void {
    this.current = Math.min(current, this.total);
    if (info) this.info = info;
    if (!this.enabled) return;
    const t = this.now();
    if (t - this.lastDraw < this.intervalMs && this.current < this.total) return;
    this.lastDraw = t;
    this.draw(false);
  }

  /** Draws the final state and ends the line. */
  done(info?: Info): void {
    if (this.finished) return;
    this.finished = true;
    if (info) this.info = info;
    if (this.enabled) this.draw(true);
  }

  /** Same as `done`. */
  finish(info?: Info): void {
    this.done(info);
  }

  /** The bar's text for the current state (without control characters). */
  render(): string {
    const elapsed = (this.now() - this.start) / 1000;
    const rate = elapsed > 0 ? this.current / elapsed : 0;
    const eta = rate > 0 ? (this.total - this.current) / rate : NaN;
    const frac = this.total > 0 ? this.current / this.total : 1;
    const width = 24;
    const filled = Math.round(frac * width);
    const bar = '#'.repeat(filled) + '.'.repeat(width - filled);
    const pct = `${Math.floor(frac * 100)}%`.padStart(4);
    const rateText =
      rate >= 1 || rate === 0 ? `${rate.toFixed(1)} ${this.unit}/s` : `${(1 / rate).toFixed(2)} s/${this.unit}`;
    const timing = this.current >= this.total ? `${formatDuration(elapsed)} total` : `ETA ${formatDuration(eta)}`;
    const parts = [
      this.label,
      `[${bar}]`,
      pct,
      `${this.current}/${this.total}`,
      rateText,
      timing,
      formatInfo(this.info),
    ];
    return parts.filter((p) => p !== '').join(' ');
  }

  private draw(final: boolean): void {
    let text = this.render();
    if (this.tty) {
      const cols = this.stream.columns ?? 0;
      if (cols > 0 && text.length > cols - 1) text = text.slice(0, cols - 1);
      this.stream.write(`\r\x1b[2K${text}${final ? '\n' : ''}`);
    } else {
      this.stream.write(`${text}\n`);
    }
  }
}
