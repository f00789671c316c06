// The project's one lock type lives in its own small target so that CourierTesting, which does
// not depend on Courier, uses the same lock (see CourierLocking/LockedValue.swift).
@_exported import CourierLocking
