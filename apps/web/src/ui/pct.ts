/** A fraction as a percentage with two decimals, as the page shows accuracies. */
export const pct = (x: number): string => `${(x * 100).toFixed(2)} %`;
