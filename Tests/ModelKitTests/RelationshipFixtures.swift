import Foundation
import ModelKit

// Models with declared relationships: a notes app (folders, notes, tags, attachments), a
// one-to-one pair, a tree for long cascades, and declarations that don't match.

final class Folder: ModelObject<Folder.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var notes: ModelArray<Memo> = .init(inverse: \Memo.Properties.folder, deleteRule: .cascade)
    }
}

final class Memo: ModelObject<Memo.Properties> {
    struct Properties: ModelProperties {
        var title = ""
        var folder: ModelRef<Folder> = .init(inverse: \Folder.Properties.notes)
        var tags: ModelArray<Label> = .init(inverse: \Label.Properties.memos)
        var attachments: ModelArray<Attachment> = .init(deleteRule: .cascade)
    }
}

final class Label: ModelObject<Label.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var memos: ModelArray<Memo> = .init(inverse: \Memo.Properties.tags)
    }
}

final class Attachment: ModelObject<Attachment.Properties> {
    struct Properties: ModelProperties {
        var fileName = ""
    }
}

/// A folder that can't be removed while it has notes.
final class Vault: ModelObject<Vault.Properties> {
    struct Properties: ModelProperties {
        var items: ModelArray<Attachment> = .init(deleteRule: .deny)
        var keep: ModelArray<Attachment> = .init(deleteRule: .noAction)
    }
}

final class Citizen: ModelObject<Citizen.Properties> {
    struct Properties: ModelProperties {
        var name = ""
        var passport: ModelRef<Passport> = .init(inverse: \Passport.Properties.holder)
    }
}

final class Passport: ModelObject<Passport.Properties> {
    struct Properties: ModelProperties {
        var number = ""
        var holder: ModelRef<Citizen> = .init(inverse: \Citizen.Properties.passport)
    }
}

/// A tree node whose children go with it.
final class Branch: ModelObject<Branch.Properties> {
    struct Properties: ModelProperties {
        var children: ModelArray<Branch> = .init(inverse: \Branch.Properties.parent, deleteRule: .cascade)
        var parent: ModelRef<Branch> = .init(inverse: \Branch.Properties.children)
    }
}

/// Declares an inverse whose other side names no inverse.
final class Lopsided: ModelObject<Lopsided.Properties> {
    struct Properties: ModelProperties {
        var other: ModelRef<LopsidedPartner> = .init(inverse: \LopsidedPartner.Properties.back)
    }
}

final class LopsidedPartner: ModelObject<LopsidedPartner.Properties> {
    struct Properties: ModelProperties {
        var back = ModelRef<Lopsided>()
    }
}

/// Declares an inverse that refers to another type.
final class WrongType: ModelObject<WrongType.Properties> {
    struct Properties: ModelProperties {
        var memo: ModelRef<Memo> = .init(inverse: \Memo.Properties.folder)
    }
}
