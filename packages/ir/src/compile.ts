// Turns a Graph into a flat list of closures over a value array, so running a GraphModule costs a
// few property reads and calls per node. Modules and attributes are looked up when the step runs,
// so swapping a submodule by name needs no recompile; graph edits do (GraphModule recompiles lazily).
import { InvalidArgumentError, isQuantizedValue, ShapeError, traceables } from '@qtk/tensor';
import type { Module } from '@qtk/nn';
import { GraphError } from './errors.js';
import { formatTarget } from './format.js';
import type { Graph } from './graph.js';
import { forEachNode, Node, type Argument } from './node.js';

type Env = unknown[];
type Load = (env: Env) => unknown;
type Step = (env: Env, owner: ModuleResolver) => void;

/** How compiled steps reach modules and attributes of the owning GraphModule. */
export interface ModuleResolver {
  /** The module at a path split at dots ([] is the root, which may be a stand-in object for method calls). */
  moduleAt(parts: readonly string[], forMethod: boolean): Module | Record<string, unknown>;
  /** The attribute (parameter, buffer, constant, submodule) at a path split at dots. */
  attrAt(parts: readonly string[]): unknown;
}

export interface CompiledGraph {
  readonly inputNames: readonly string[];
  run(owner: ModuleResolver, inputs: readonly unknown[]): unknown;
}

function hasNode(arg: Argument): boolean {
  let found = false;
  forEachNode(arg, () => {
    found = true;
  });
  return found;
}

function splitPath(path: string): string[] {
  return path === '' ? [] : path.split('.');
}

export function compileGraph(graph: Graph): CompiledGraph {
  const nodes = graph.nodes;
  const index = new Map<Node, number>();
  nodes.forEach((n, i) => {
    index.set(n, i);
  });

  const load = (arg: Argument): Load => {
    if (arg instanceof Node) {
      const i = index.get(arg)!;
      return (env) => env[i];
    }
    if (!hasNode(arg)) return () => arg;
    if (Array.isArray(arg)) {
      const ls = arg.map(load);
      return (env) => ls.map((l) => l(env));
    }
    const obj = arg as Record<string, unknown>;
    const keys = Object.keys(obj);
    const ls = keys.map((k) => load(obj[k]));
    return (env) => {
      const o: Record<string, unknown> = {};
      for (let j = 0; j < keys.length; j++) o[keys[j]!] = ls[j]!(env);
      return o;
    };
  };

  /** Loads the call arguments; a non-empty kwargs object goes last. */
  const loadArgs = (n: Node, skip = 0): Load[] => {
    const ls = n.args.slice(skip).map(load);
    if (Object.keys(n.kwargs).length) ls.push(load(n.kwargs));
    return ls;
  };

  // Free each value after its last reader so intermediate tensors can be collected during the run.
  const lastUse = new Array<number>(nodes.length).fill(-1);
  nodes.forEach((n, i) => {
    for (const inp of n.inputNodes) lastUse[index.get(inp)!] = i;
  });
  const frees: number[][] = nodes.map(() => []);
  lastUse.forEach((u, j) => {
    if (u >= 0 && nodes[u]!.op !== 'output') frees[u]!.push(j);
  });

  const placeholders: number[] = [];
  const inputNames: string[] = [];
  const steps: Step[] = [];
  const stepNodes: Node[] = [];
  let output: Load = () => undefined;

  nodes.forEach((n, o) => {
    let step: Step | null = null;
    switch (n.op) {
      case 'placeholder':
        placeholders.push(o);
        inputNames.push(n.target);
        break;
      case 'output':
        output = load(n.args[0]);
        break;
      case 'get_attr': {
        const parts = splitPath(n.target);
        step = (env, r) => {
          env[o] = r.attrAt(parts);
        };
        break;
      }
      case 'call_function': {
        const fn = traceables.get(n.target).wrapped;
        const ls = loadArgs(n);
        if (ls.length === 1) {
          const l0 = ls[0]!;
          step = (env) => {
            env[o] = fn(l0(env));
          };
        } else if (ls.length === 2) {
          const [l0, l1] = ls as [Load, Load];
          step = (env) => {
            env[o] = fn(l0(env), l1(env));
          };
        } else {
          step = (env) => {
            env[o] = fn(...ls.map((l) => l(env)));
          };
        }
        break;
      }
      case 'call_method': {
        const self = load(n.args[0]);
        const ls = loadArgs(n, 1);
        const name = n.target;
        step = (env) => {
          const s = self(env) as Record<string, (...a: unknown[]) => unknown>;
          const f = s?.[name];
          if (typeof f !== 'function') throw new GraphError(`node ${n.name}: ${describe(s)} has no method '${name}'`);
          env[o] = f.apply(
            s,
            ls.map((l) => l(env)),
          );
        };
        break;
      }
      case 'call_module': {
        const parts = splitPath(n.target);
        const ls = loadArgs(n);
        const method = n.method;
        if (method === undefined) {
          if (ls.length === 1) {
            const l0 = ls[0]!;
            step = (env, r) => {
              env[o] = (r.moduleAt(parts, false) as Module).call(l0(env));
            };
          } else {
            step = (env, r) => {
              env[o] = (r.moduleAt(parts, false) as Module).call(...ls.map((l) => l(env)));
            };
          }
        } else {
          step = (env, r) => {
            const m = r.moduleAt(parts, true) as unknown as Record<string, (...a: unknown[]) => unknown>;
            const f = m[method];
            if (typeof f !== 'function')
              throw new GraphError(`node ${n.name}: module '${n.target}' has no method '${method}'`);
            env[o] = f.apply(
              m,
              ls.map((l) => l(env)),
            );
          };
        }
        break;
      }
    }
    if (step === null) return;
    const free = frees[o]!;
    if (free.length) {
      const inner = step;
      step = (env, r) => {
        inner(env, r);
        for (let j = 0; j < free.length; j++) env[free[j]!] = undefined;
      };
    }
    steps.push(step);
    stepNodes.push(n);
  });

  return {
    inputNames,
    run(owner, inputs) {
      if (inputs.length !== placeholders.length) {
        throw new InvalidArgumentError(
          `GraphModule.forward: expected ${placeholders.length} input${placeholders.length === 1 ? '' : 's'} (${inputNames.join(', ')}), got ${inputs.length}` +
            '; parameters with default values and concreteArgs were fixed when the model was traced',
        );
      }
      const env: Env = new Array(nodes.length);
      for (let i = 0; i < placeholders.length; i++) env[placeholders[i]!] = inputs[i];
      let k = 0;
      try {
        for (; k < steps.length; k++) steps[k]!(env, owner);
      } catch (e) {
        const n = stepNodes[k]!;
        // A result too large to allocate (huge inputs, or module settings from a file): a typed error naming the node.
        if (
          e instanceof RangeError &&
          /typed array length|array buffer allocation|invalid array length/i.test(e.message)
        ) {
          const where = `graph node '${n.name}' (${n.op} ${formatTarget(n)})`;
          const err = new ShapeError(
            `${where}: its result is too large to allocate (${e.message}); check the input size and the module's settings`,
            { cause: e },
          );
          Object.defineProperty(err, 'graphNode', { value: n.name });
          throw err;
        }
        const refused = quantizedIntoFloatModule(n, owner, (i) => env[index.get(i)!], e);
        if (refused) throw refused;
        if (e instanceof Error && !(e as { graphNode?: string }).graphNode) {
          Object.defineProperty(e, 'graphNode', { value: n.name });
          e.message += ` [while running graph node '${n.name}' (${n.op} ${formatTarget(n)})]`;
        }
        throw e;
      }
      return output(env);
    },
  };
}

/**
 * The error for a float module given a fixed-point QTensor (which only modules with `takesQuantizedValues` take):
 * in a converted model that is a module added by hand after conversion, whose own failure would name something
 * unrelated. Null for any other failure.
 */
function quantizedIntoFloatModule(
  n: Node,
  owner: ModuleResolver,
  valueAt: (input: Node) => unknown,
  cause: unknown,
): GraphError | null {
  if (n.op !== 'call_module' || n.method !== undefined || !n.inputNodes.some((i) => isQuantizedValue(valueAt(i))))
    return null;
  const module = owner.moduleAt(splitPath(n.target), false) as Module;
  const type = module.constructor as { name: string; takesQuantizedValues?: boolean };
  if (type.takesQuantizedValues) return null;
  const err = new GraphError(
    `graph node '${n.name}' (${type.name}) was given a fixed-point QTensor, which a float module cannot take: in a ` +
      'converted model only fixed-point modules get them, and CPU nodes of a hybrid model get dequantized values. ' +
      'A module added after convertFx is never quantized: add it to the float model and prepare, calibrate and ' +
      'convert again (a converted model is not edited, as horizon_plugin_pytorch also says of convert_fx), or ' +
      'feed it float values through a Dequantize (@qtk/fixed-point) before it',
    { cause },
  );
  Object.defineProperty(err, 'graphNode', { value: n.name });
  return err;
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return String(v);
  return typeof v === 'object' ? (v.constructor?.name ?? 'object') : typeof v;
}
