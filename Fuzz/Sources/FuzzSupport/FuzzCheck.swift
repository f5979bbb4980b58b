import Foundation
import ModelKit

/// What every fuzz target checks for one input: loading it never crashes (the sanitizer and
/// libFuzzer catch that), never throws anything but a typed error, and after an error leaves
/// the context exactly as it was.
public enum FuzzCheck {
    /// The context every load goes into: one model, so that a load is not into an empty
    /// context (which takes the one-pass loader first) every time.
    private static func context(empty: Bool) -> (ModelContext, FuzzPost?) {
        _ = FuzzModels.registered
        let context = ModelContext()
        guard !empty else { return (context, nil) }
        let post = FuzzPost.instance(in: context)
        post.title = "before"
        return (context, post)
    }

    /// Loads `data` with `ModelContext.load(_:)`, into an empty context (one pass) and into one
    /// holding a model (the general loader). Unknown stored keys fail the first load and are
    /// ignored by the second: the default, a warning on standard error for each, would print a
    /// line for nearly every mutated key.
    public static func load(_ data: Data) {
        for empty in [true, false] {
            let (context, post) = context(empty: empty)
            do {
                try context.load(data, options: DeserializationOptions(unknownKeys: empty ? .fail : .ignore))
            } catch is SerializationError {
                guard context.count == (empty ? 0 : 1), post?.title ?? "before" == "before" else {
                    fatalError("a failed load changed the context")
                }
            } catch {
                fatalError("a load threw an untyped error: \(error)")
            }
        }
    }

    /// The model-level decoders: `ModelValue(json:)`, `Model.instance(fromJSON:)` and
    /// `ModelValue(propertyList:)` on what Foundation reads.
    public static func decode(_ data: Data) {
        _ = FuzzModels.registered
        let (context, post) = context(empty: false)
        do {
            _ = try FuzzAuthor.instance(fromJSON: data, in: context, options: DeserializationOptions(unknownKeys: .fail))
        } catch is SerializationError {
            guard context.count == 1, post?.title == "before" else { fatalError("a failed decode changed the context") }
        } catch {
            fatalError("a decode threw an untyped error: \(error)")
        }
        if let object = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil) {
            do {
                let value = try ModelValue(propertyList: object)
                _ = try? FuzzEverything.instance(from: value, in: ModelContext(), options: DeserializationOptions(unknownKeys: .fail))
            } catch is SerializationError {
            } catch {
                fatalError("ModelValue(propertyList:) threw an untyped error: \(error)")
            }
        }
    }
}
