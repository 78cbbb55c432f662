/** The stages of a quantization job, in order (the page's progress bar walks through them). */
export const JOB_STAGES = [
  'import',
  'float eval',
  'calibrate',
  'convert',
  'fixed-point eval',
  'profile',
  'export',
] as const;
export type JobStage = (typeof JOB_STAGES)[number];
