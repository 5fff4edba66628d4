package chunkstore

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// GroupMember is one member of a group (collection group_member).
type GroupMember struct {
	GroupID string `bson:"group_id"`
	UserID  string `bson:"user_id"`
	Role    int32  `bson:"role"`
}

// ApplyGroupMembers turns the group's member list before (as GroupMembers read it) into
// members, writing only the difference: new members are inserted, members whose role changed
// are updated, departed members are deleted, each in batches of writeBatch documents (one
// command each, within the store timeout). A member inserted meanwhile by another writer gets
// the listed role.
func (s *Store) ApplyGroupMembers(ctx context.Context, groupID string, before, members []GroupMember) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	return s.applyGroupMembers(ctx, groupID, before, members)
}

func (s *Store) applyGroupMembers(ctx context.Context, groupID string, before, members []GroupMember) error {
	old := make(map[string]int32, len(before))
	for _, m := range before {
		old[m.UserID] = m.Role
	}
	keep := make(map[string]bool, len(members))
	var added, changed []GroupMember
	for _, m := range members {
		m.GroupID = groupID
		keep[m.UserID] = true
		role, ok := old[m.UserID]
		switch {
		case !ok:
			added = append(added, m)
		case role != m.Role:
			changed = append(changed, m)
		}
	}
	var gone []string
	for _, m := range before {
		if !keep[m.UserID] {
			gone = append(gone, m.UserID)
		}
	}
	if err := s.removeGroupMembers(ctx, groupID, gone); err != nil {
		return err
	}
	if s.natural[CollectionGroupMember] {
		docs := make([]any, len(added))
		for i, m := range added {
			id, err := pairKey(groupID, m.UserID)
			if err != nil {
				return err
			}
			docs[i] = bson.D{{Key: "_id", Value: id}, {Key: "group_id", Value: groupID}, {Key: "user_id", Value: m.UserID}, {Key: "role", Value: m.Role}}
		}
		dups, err := insertNew(ctx, s.groupMembers, "add group members", docs)
		if err != nil {
			return err
		}
		for _, i := range dups {
			changed = append(changed, added[i])
		}
		added = nil
	}
	// Legacy collections (and nothing else) upsert the new members by their fields.
	models := make([]mongo.WriteModel, 0, len(added)+len(changed))
	for i, m := range append(added, changed...) {
		id, err := pairKey(groupID, m.UserID)
		if err != nil {
			return err
		}
		fields := bson.D{{Key: "group_id", Value: groupID}, {Key: "user_id", Value: m.UserID}}
		models = append(models, mongo.NewUpdateOneModel().
			SetFilter(s.keyFilter(CollectionGroupMember, id, fields)).
			SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "role", Value: m.Role}}}}).
			SetUpsert(i < len(added)))
	}
	return bulkWriteBatches(ctx, s.groupMembers, "set group member roles", models)
}

// removeGroupMembers deletes the users' memberships: by _id, or by field in a legacy
// collection, writeBatch at a time.
func (s *Store) removeGroupMembers(ctx context.Context, groupID string, userIDs []string) error {
	return inBatches(len(userIDs), func(from, to int) error {
		batch := userIDs[from:to]
		if s.natural[CollectionGroupMember] {
			ids := make([]string, len(batch))
			for i, u := range batch {
				id, err := pairKey(groupID, u)
				if err != nil {
					return err
				}
				ids[i] = id
			}
			_, err := deleteByIDs(ctx, s.groupMembers, "remove group members", ids)
			return err
		}
		_, err := s.groupMembers.DeleteMany(ctx, bson.D{
			{Key: "group_id", Value: groupID},
			{Key: "user_id", Value: bson.D{{Key: "$in", Value: batch}}},
		})
		return storeError("remove group members", err)
	})
}

// FindGroupMemberships returns, for each group, userID's membership: by _id (findByIDs), or in
// one query by field in a collection of an earlier version. Groups the user is not in are
// absent from the map.
func (s *Store) FindGroupMemberships(ctx context.Context, userID string, groupIDs []string) (map[string]GroupMember, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	out := make(map[string]GroupMember, len(groupIDs))
	if len(groupIDs) == 0 {
		return out, nil
	}
	var docs []GroupMember
	if s.natural[CollectionGroupMember] {
		ids := make([]string, len(groupIDs))
		for i, g := range groupIDs {
			if ids[i], err = pairKey(g, userID); err != nil {
				return nil, err
			}
		}
		docs, err = findByIDs[GroupMember](ctx, s, s.groupMembers, "find group members", ids)
	} else {
		docs, err = findAll[GroupMember](ctx, s.groupMembers, "find group members", bson.D{
			{Key: "group_id", Value: bson.D{{Key: "$in", Value: groupIDs}}},
			{Key: "user_id", Value: userID},
		})
	}
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		out[d.GroupID] = d
	}
	return out, nil
}

// GroupMembers returns every member of a group. It is a query by group_id, which FerretDB
// answers with a scan of the collection: no single _id names a group's members.
func (s *Store) GroupMembers(ctx context.Context, groupID string) ([]GroupMember, error) {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return findAll[GroupMember](ctx, s.groupMembers, "find group members", bson.D{{Key: "group_id", Value: groupID}})
}
