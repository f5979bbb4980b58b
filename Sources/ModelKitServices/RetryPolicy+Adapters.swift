import Foundation

// The schedule KintoService retries on, for an adapter that retries as it does. (The policy
// itself and its internal `delay(before:)` are in HTTPClient.swift.)
extension RetryPolicy {
    /// How long to wait before attempt `attempt` (the first retry is attempt 2) when the server
    /// named no wait: ``delay``, doubled for each retry before it, never more than
    /// ``maximumDelay``. An attempt beyond ``maximumAttempts`` should not be made.
    ///
    /// ```swift
    /// let policy = RetryPolicy(maximumAttempts: 4, delay: .seconds(1))
    /// for attempt in 1...policy.maximumAttempts {
    ///     if attempt > 1 { try await Task.sleep(for: policy.delay(beforeAttempt: attempt)) }
    ///     if let answer = try? await send(request) { return answer }
    /// }
    /// ```
    ///
    /// - Complexity: O(1).
    public func delay(beforeAttempt attempt: Int) -> Duration {
        attempt < 2 ? .zero : delay(before: attempt)
    }
}
