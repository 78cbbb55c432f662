// The stand-in for a tensor (or any value) during symbolic tracing: a JS Proxy that records method
// calls and attribute reads as graph nodes and refuses to become a primitive.
import { Tensor, TRACED } from '@qtk/tensor';
import type { Node } from './node.js';

/** What a proxy needs from its tracer. */
export interface ProxyHost {
  recordMethod(self: Node, name: string, args: unknown[]): unknown;
  recordAttribute(self: Node, key: string | number): unknown;
  /** The error for a use the trace cannot record (`what` says which). */
  traceError(self: Node, what: string, hint?: string): Error;
}

class TracedValue {}

const INSPECT = Symbol.for('nodejs.util.inspect.custom');

const owners = new WeakMap<object, { host: ProxyHost; node: Node }>();

/** The node and tracer behind a proxy, or undefined for anything else. */
export function proxyInfo(v: unknown): { host: ProxyHost; node: Node } | undefined {
  return typeof v === 'object' && v !== null ? owners.get(v) : undefined;
}

/** Spreading or for-of over a traced value of unknown length stops here. */
const MAX_ITERATION = 1024;

function isTensorMethod(name: string): boolean {
  if (name === 'constructor') return false;
  for (let p: object | null = Tensor.prototype; p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    const d = Object.getOwnPropertyDescriptor(p, name);
    if (d) return typeof d.value === 'function';
  }
  return false;
}

const methodCache = new Map<string, boolean>();

function coercionProblem(hint: string): [string, string | undefined] {
  if (hint === 'number') {
    return [
      'a traced value was used as a number (a comparison such as `x.sum() > 0`, arithmetic, or Number(x)), so a branch or value would depend on data the trace does not have',
      undefined,
    ];
  }
  if (hint === 'string')
    return ['a traced value was turned into a string (a template literal or String(x))', undefined];
  return [
    'a traced value was used with a JS operator (`+`, `-`, `==`, ...) or as a primitive; JS cannot overload operators',
    'Use the tensor ops instead (add(a, b) or a.add(b), mul, gt, ...), or wrap the code with fxWrap(fn) so it runs for real.',
  ];
}

/**
 * A proxy standing for `node`. Method calls become call_method nodes, other property reads become
 * `getattr` / `getitem` call_function nodes, array destructuring reads items one by one. Coercion to
 * a primitive throws a TraceError. Truthiness (`if (x)`, `!!x`, `x ? a : b`) cannot be intercepted
 * in JS: a proxy is always truthy, so such branches silently take the true side; wrap them with fxWrap.
 */
export function createProxy(host: ProxyHost, node: Node): unknown {
  const handler: ProxyHandler<TracedValue> = {
    get(_t, prop) {
      if (prop === TRACED) return true;
      if (prop === Symbol.toPrimitive) {
        return (hint: string) => {
          const [problem, h] = coercionProblem(hint);
          throw host.traceError(node, problem, h);
        };
      }
      if (prop === Symbol.iterator) {
        return function* () {
          for (let i = 0; i < MAX_ITERATION; i++) yield host.recordAttribute(node, i);
          throw host.traceError(
            node,
            `iterated past ${MAX_ITERATION} items of a traced value of unknown length (spread or for-of)`,
            'Destructure a fixed number of items (const [a, b] = x) or wrap the code with fxWrap(fn).',
          );
        };
      }
      if (prop === INSPECT) return () => `Proxy(${node.name})`;
      if (typeof prop === 'symbol' || prop === 'then') return undefined;
      if (prop === 'valueOf' || prop === 'toString' || prop === 'toJSON') {
        return () => {
          throw host.traceError(node, `${prop}() was called on a traced value`);
        };
      }
      let isMethod = methodCache.get(prop);
      if (isMethod === undefined) {
        isMethod = isTensorMethod(prop);
        methodCache.set(prop, isMethod);
      }
      if (isMethod) return (...args: unknown[]) => host.recordMethod(node, prop, args);
      return host.recordAttribute(node, /^(0|[1-9]\d*)$/.test(prop) ? Number(prop) : prop);
    },
    set(_t, prop) {
      throw host.traceError(node, `assigning property '${String(prop)}' of a traced value cannot be recorded`);
    },
    has(_t, prop) {
      throw host.traceError(
        node,
        `\`'${String(prop)}' in x\` on a traced value depends on data the trace does not have`,
      );
    },
    ownKeys() {
      throw host.traceError(
        node,
        'enumerating the keys of a traced value (Object.keys, {...x}, for-in) depends on data the trace does not have',
      );
    },
    deleteProperty(_t, prop) {
      throw host.traceError(node, `deleting property '${String(prop)}' of a traced value cannot be recorded`);
    },
  };
  const p = new Proxy(new TracedValue(), handler);
  owners.set(p, { host, node });
  return p;
}
