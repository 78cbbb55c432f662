// Requantize planners by name, for the modules that plan when they run (average pooling, mean, sum:
// their accumulator scale depends on the window or the reduced size). Such a module stores its
// planner's name; loading it looks the name up here, so a march with its own planner registers it
// once and its models save and load. Every other module stores its plans' integers.
import { SerializationError } from '@qtk/ir';
import { Registry } from '@qtk/tensor';
import { planRequantizeInt16, planRequantizeWide, type RequantizePlanner } from './requantize.js';

export interface NamedRequantizePlanner {
  /** Stored in model files; name it by its arithmetic. */
  readonly name: string;
  readonly plan: RequantizePlanner;
}

export const requantizePlanners = new Registry<NamedRequantizePlanner>('requantize planner');
requantizePlanners.register({ name: 'int16_intermediate', plan: planRequantizeInt16 });
requantizePlanners.register({ name: 'wide', plan: planRequantizeWide });

/** The planner registered under `name` (a RegistryError listing the registered ones otherwise). */
export function requantizePlanner(name: string): RequantizePlanner {
  return requantizePlanners.get(name).plan;
}

/** The registered name of `planner`, or null when it is not registered. */
export function requantizePlannerName(planner: unknown): string | null {
  return requantizePlanners.list().find((p) => p.plan === planner)?.name ?? null;
}

/** The registered name of a module's planner, for its codec; a SerializationError saying what to do otherwise. */
export function storedPlannerName(planner: unknown, where: string): string {
  const name = requantizePlannerName(planner);
  if (name === null) {
    throw new SerializationError(
      `${where}: its requantize planner is not registered, so a loaded model could not plan with it; ` +
        'register it with requantizePlanners.register({ name, plan }) before converting',
    );
  }
  return name;
}
