import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking

    /// Declines HTTP authentication challenges, so that a 401 ends the request (Linux only).
    ///
    /// A 401 with `WWW-Authenticate: Basic` (Kinto's answer to wrong credentials) raises a
    /// challenge in swift-corelibs-foundation, and without a session delegate that answers it the
    /// task neither completes nor times out (swift-corelibs-foundation#5456, fixed after Swift
    /// 6.3.1). Only a session delegate is asked (a per-task one is not), and declining cancels the
    /// task: ``KintoService`` reads a cancellation it did not ask for as the 401 it was.
    final class ChallengeDecliner: NSObject, URLSessionTaskDelegate, Sendable {
        func urlSession(
            _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
            completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
        ) {
            // The credentials are in the request's own header; the session has none to offer.
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }
#endif
