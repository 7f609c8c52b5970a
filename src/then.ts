/** Goes on with `value` now when it is at hand, or once it settles: no promise on a warm path. */
export const andThen = <T, R>(value: T | Promise<T>, next: (value: T) => R): R | Promise<R> =>
  value instanceof Promise ? (value.then(next) as Promise<R>) : next(value)
