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

// SetGroupMembers makes members the group's complete member list: listed users are upserted
// with their roles, everyone else is removed.
func (s *Store) SetGroupMembers(ctx context.Context, groupID string, members []GroupMember) error {
	ctx, done, err := s.admit(ctx)
	if err != nil {
		return err
	}
	defer done()
	ids := make([]string, 0, len(members))
	models := make([]mongo.WriteModel, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.UserID)
		id, err := pairKey(groupID, m.UserID)
		if err != nil {
			return err
		}
		fields := bson.D{{Key: "group_id", Value: groupID}, {Key: "user_id", Value: m.UserID}}
		update := bson.D{{Key: "$set", Value: bson.D{{Key: "role", Value: m.Role}}}}
		if s.natural[CollectionGroupMember] {
			update = append(update, bson.E{Key: "$setOnInsert", Value: fields})
		}
		models = append(models, mongo.NewUpdateOneModel().
			SetFilter(s.keyFilter(CollectionGroupMember, id, fields)).
			SetUpdate(update).
			SetUpsert(true))
	}
	if len(models) > 0 {
		if err := bulkUpsert(ctx, s.groupMembers, "set group members", models); err != nil {
			return err
		}
	}
	_, err = s.groupMembers.DeleteMany(ctx, bson.D{
		{Key: "group_id", Value: groupID},
		{Key: "user_id", Value: bson.D{{Key: "$nin", Value: ids}}},
	})
	return storeError("remove group members", err)
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
