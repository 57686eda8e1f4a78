/**
 * Values by a dense id (automaton states and walk slots are numbered 0, 1, 2… as they are made):
 * an array indexed by the id. A Map keyed by small integers hashes every lookup; these are read
 * on every first visit of a state, many times over.
 */
export class DenseTable<T> {
  private readonly values: (T | undefined)[] = [];

  get(id: number): T | undefined {
    return id < this.values.length ? this.values[id] : undefined;
  }

  set(id: number, value: T): void {
    const values = this.values;
    // Filled up to the id: an element far past the end would turn the array into a dictionary.
    while (values.length < id) values.push(undefined);
    values[id] = value;
  }
}
