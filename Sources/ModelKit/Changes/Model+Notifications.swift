import Foundation
import Synchronization

// The seed's "Model Property Change Notifications", through NotificationCenter.

extension Notification.Name {
    /// Posted after a persisted property of a model changed, once per property, with the model as
    /// the notification's object. The user info holds ``ModelNotifications/propertyKey``,
    /// ``ModelNotifications/oldValueKey`` and ``ModelNotifications/newValueKey``.
    ///
    /// The counterpart of `MKitModelPropertyChangedNotification`. Posted only while notifications
    /// are on (``ModelNotifications/isEnabled`` or ``Model/postsNotifications``).
    public static let modelPropertyDidChange = Notification.Name("ModelKit.modelPropertyDidChange")

    /// Posted once by the outermost ``Model/endChanges()`` of a batch that changed something, with
    /// the model as the object and ``ModelNotifications/changesKey`` (a ``ModelChanges``) in the
    /// user info. The seed posted this as a property notification without user info.
    public static let modelDidChange = Notification.Name("ModelKit.modelDidChange")
}

/// Switches and user-info keys of ModelKit's NotificationCenter notifications.
///
/// Posting a notification costs far more than a write, and NotificationCenter cannot tell whether
/// anybody listens, so notifications are off until you switch them on: for every model with
/// ``isEnabled``, or for one model with ``Model/postsNotifications``.
///
/// ```swift
/// author.postsNotifications = true
/// let token = NotificationCenter.default.addObserver(
///     forName: .modelPropertyDidChange, object: author, queue: nil
/// ) { note in
///     let name = note.userInfo?[ModelNotifications.propertyKey] as? String
///     let new = note.userInfo?[ModelNotifications.newValueKey] as? ModelValue
/// }
/// ```
///
/// Notifications are posted synchronously on the thread that changed the model, to
/// ``center``, without any ModelKit lock held: observers may read the model.
public enum ModelNotifications {
    /// The property's name (a `String`) in a ``Foundation/NSNotification/Name/modelPropertyDidChange``.
    public static let propertyKey = "property"
    /// The value before the change (a ``ModelValue``).
    public static let oldValueKey = "oldValue"
    /// The value after the change (a ``ModelValue``).
    public static let newValueKey = "newValue"
    /// The changes of a batch (a ``ModelChanges``) in a ``Foundation/NSNotification/Name/modelDidChange``.
    public static let changesKey = "changes"

    private static let enabled = Atomic<Bool>(false)
    private static let centerBox = Locked(NotificationCenter.default)

    /// Whether every model posts notifications. Off by default.
    public static var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set {
            enabled.store(newValue, ordering: .relaxed)
            ChangeEpoch.advance()
        }
    }

    /// Where notifications are posted; `NotificationCenter.default` unless you change it.
    public static var center: NotificationCenter {
        get { centerBox.withLock { $0 } }
        set { centerBox.withLock { $0 = newValue } }
    }
}

extension Model {
    /// Whether this model posts NotificationCenter notifications, even while
    /// ``ModelNotifications/isEnabled`` is off.
    public var postsNotifications: Bool {
        get { storage.tracker?.postsNotifications ?? false }
        set {
            guard newValue != postsNotifications else { return }
            changeTracker.postsNotifications = newValue
            storage.quietEpoch = 0
        }
    }

    func postNotifications(for changes: ModelChanges, batched: Bool) {
        let center = ModelNotifications.center
        if batched {
            center.post(name: .modelDidChange, object: self, userInfo: [ModelNotifications.changesKey: changes])
            return
        }
        for change in changes {
            center.post(
                name: .modelPropertyDidChange, object: self,
                userInfo: [
                    ModelNotifications.propertyKey: change.property,
                    ModelNotifications.oldValueKey: change.oldValue,
                    ModelNotifications.newValueKey: change.newValue,
                ])
        }
    }
}
