package openim

import (
	"encoding/json"
	"strconv"

	"github.com/msggate/msggate/internal/im"
)

// OpenIM's message cache: key MSG_CACHE:<conversationID>:<seq>
// (pkg/common/storage/cache/cachekey/msg.go GetMsgCacheKey), a rockscache hash whose value is
// encoding/json of the slot model (model.MsgInfoModel, which has no json tags, so the keys are
// Go field names). msgtransfer writes it when it assigns the seq, before the message reaches
// MongoDB through Kafka (controller/msg_transfer.go BatchInsertChat2Cache and
// cache/redis/msg.go SetMessageBySeqs, a RawSet with a 24 h TTL); reads fill it from MongoDB
// (batchGetCache2). Every change to a stored message (revoke, delete for one or for everyone,
// read receipt, retention) updates MongoDB first and then tags the key deleted
// (DelMessageBySeqs), so a value OpenIM would still serve is never newer than a message MongoDB
// holds. Hence the merge rule: MongoDB's slot wins whenever it holds a message or a
// delete-for-everyone tombstone; the cache is consulted only for seqs MongoDB has no message
// for, and only values rockscache would serve (see rocksValue) are taken.

func msgCacheKey(conversationID string, seq int64) string {
	return "MSG_CACHE:" + conversationID + ":" + strconv.FormatInt(seq, 10)
}

// cachedSlot is model.MsgInfoModel as encoding/json writes it.
type cachedSlot struct {
	Msg     *cachedMessage `json:"Msg"`
	Revoke  *cachedRevoke  `json:"Revoke"`
	DelList []string       `json:"DelList"`
	IsRead  bool           `json:"IsRead"`
}

// cachedMessage is model.MsgDataModel as encoding/json writes it.
type cachedMessage struct {
	SendID           string             `json:"SendID"`
	RecvID           string             `json:"RecvID"`
	GroupID          string             `json:"GroupID"`
	ClientMsgID      string             `json:"ClientMsgID"`
	ServerMsgID      string             `json:"ServerMsgID"`
	SenderPlatformID int32              `json:"SenderPlatformID"`
	SenderNickname   string             `json:"SenderNickname"`
	SenderFaceURL    string             `json:"SenderFaceURL"`
	SessionType      int32              `json:"SessionType"`
	MsgFrom          int32              `json:"MsgFrom"`
	ContentType      int32              `json:"ContentType"`
	Content          string             `json:"Content"`
	Seq              int64              `json:"Seq"`
	SendTime         int64              `json:"SendTime"`
	CreateTime       int64              `json:"CreateTime"`
	Status           int32              `json:"Status"`
	IsRead           bool               `json:"IsRead"`
	Options          map[string]bool    `json:"Options"`
	OfflinePush      *cachedOfflinePush `json:"OfflinePush"`
	AtUserIDList     []string           `json:"AtUserIDList"`
	AttachedInfo     string             `json:"AttachedInfo"`
	Ex               string             `json:"Ex"`
}

type cachedOfflinePush struct {
	Title         string `json:"Title"`
	Desc          string `json:"Desc"`
	Ex            string `json:"Ex"`
	IOSPushSound  string `json:"IOSPushSound"`
	IOSBadgeCount bool   `json:"IOSBadgeCount"`
}

type cachedRevoke struct {
	Role     int32  `json:"Role"`
	UserID   string `json:"UserID"`
	Nickname string `json:"Nickname"`
	Time     int64  `json:"Time"`
}

// decodeCachedSlot decodes a MSG_CACHE value. ok is false for a value that holds no message
// for seq (OpenIM caches MongoDB's misses too).
func decodeCachedSlot(value string, seq int64) (im.Slot, bool, error) {
	var c cachedSlot
	if err := json.Unmarshal([]byte(value), &c); err != nil {
		return im.Slot{}, false, err
	}
	if c.Msg == nil || c.Msg.Seq != seq {
		return im.Slot{}, false, nil
	}
	m := c.Msg
	slot := im.Slot{
		Msg: &im.Message{
			SendID: m.SendID, RecvID: m.RecvID, GroupID: m.GroupID,
			ClientMsgID: m.ClientMsgID, ServerMsgID: m.ServerMsgID,
			SenderPlatformID: m.SenderPlatformID, SenderNickname: m.SenderNickname, SenderFaceURL: m.SenderFaceURL,
			SessionType: m.SessionType, MsgFrom: m.MsgFrom, ContentType: m.ContentType, Content: m.Content,
			Seq: m.Seq, SendTime: m.SendTime, CreateTime: m.CreateTime, Status: m.Status, IsRead: m.IsRead,
			Options: m.Options, AtUserIDList: m.AtUserIDList, AttachedInfo: m.AttachedInfo, Ex: m.Ex,
		},
		DelList: c.DelList,
		IsRead:  c.IsRead,
	}
	if p := m.OfflinePush; p != nil {
		slot.Msg.OfflinePush = &im.OfflinePush{Title: p.Title, Desc: p.Desc, Ex: p.Ex, IOSPushSound: p.IOSPushSound, IOSBadgeCount: p.IOSBadgeCount}
	}
	if r := c.Revoke; r != nil {
		slot.Revoke = &im.Revoke{Role: r.Role, UserID: r.UserID, Nickname: r.Nickname, Time: r.Time}
	}
	if slot.DelList == nil {
		slot.DelList = []string{}
	}
	return slot, true, nil
}
